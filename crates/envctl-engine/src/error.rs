//! What can go wrong talking to the engine (the Docker daemon or Podman's service), each
//! cause named with its fix. Every error that reached an engine carries which one it was,
//! so a message on Podman says "the Podman service" and its hint says `podman`.

use thiserror::Error;

use envctl_facts::engine::EngineKind;

/// Where envctl talked to an engine, and which engine answered there: `Unknown` until
/// `/version` named it (a socket that never answered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The socket or host: `unix:///run/podman/podman.sock`, `tcp://host:2376`.
    pub address: String,
    pub kind: EngineKind,
}

impl Endpoint {
    /// An endpoint whose engine is not known yet.
    pub fn unidentified(address: impl Into<String>) -> Endpoint {
        let address: String = address.into();
        Endpoint {
            // An endpoint is only ever shown: a password in it never is.
            address: envctl_core::secret::masked_url(&address).into_owned(),
            kind: EngineKind::Unknown,
        }
    }

    /// How a message names what answers there: `Podman service`, `Docker daemon`, `daemon`.
    pub fn daemon(&self) -> &'static str {
        self.kind.daemon()
    }

    /// The other machine a `tcp://` or `ssh://` endpoint names (`gpu2` of
    /// `tcp://gpu2:2376`), where its daemon's service commands must be run; `None` for a
    /// unix socket or a loopback address, which are this machine's.
    pub fn other_machine(&self) -> Option<String> {
        if !(self.address.starts_with("tcp://") || self.address.starts_with("ssh://")) {
            return None;
        }
        let url = url::Url::parse(&self.address).ok()?;
        // `tcp://` is no special scheme to the URL parser: an IPv4 address comes back as a
        // domain, so it is read as an address here.
        let address: Option<std::net::IpAddr> = match url.host()? {
            url::Host::Domain(name) if name.eq_ignore_ascii_case("localhost") => return None,
            url::Host::Domain(name) => match name.parse() {
                Ok(address) => Some(address),
                Err(_) => return Some(name.to_string()),
            },
            url::Host::Ipv4(address) => Some(address.into()),
            url::Host::Ipv6(address) => Some(address.into()),
        };
        address
            .filter(|address| !address.is_loopback())
            .map(|address| address.to_string())
    }

    /// `advice` about the daemon's service (`systemctl`, `journalctl`), said for the
    /// machine it runs on: as is for this machine's, prefixed with "on `HOST`" for another's
    /// (the commands would act on this machine's service, which is not the one meant).
    fn where_it_runs(&self, advice: String) -> String {
        match self.other_machine() {
            Some(host) => format!("on `{host}`, where that daemon runs: {advice}"),
            None => advice,
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.address)
    }
}

/// A failure reaching or using the daemon. `endpoint` is the socket or host envctl tried.
#[derive(Debug, Error)]
pub enum EngineError {
    /// `-H`, `--context`, `DOCKER_HOST`, `DOCKER_CONTEXT` or the current context could not
    /// be followed (`host::docker_config`).
    #[error(transparent)]
    Choice(#[from] envctl_host::docker_config::DaemonChoiceError),
    #[error("the socket `{path}` does not exist")]
    SocketMissing { path: String, engine: EngineKind },
    #[error("permission denied on the socket `{endpoint}`")]
    PermissionDenied {
        endpoint: Endpoint,
        #[source]
        source: bollard::errors::Error,
    },
    #[error("nothing answers at `{endpoint}` (connection refused)")]
    ConnectionRefused {
        endpoint: Endpoint,
        #[source]
        source: bollard::errors::Error,
    },
    #[error("the {} at `{endpoint}` did not answer within {seconds} s", .endpoint.daemon())]
    Timeout { endpoint: Endpoint, seconds: u64 },
    /// A TCP connection that never completed: the host, the network or a firewall, never
    /// the daemon, which was not reached (`engine::connector::ConnectFailure::NeverConnected`).
    #[error(
        "no connection to `{endpoint}` completed: nothing answered there (the host is down or unreachable, the address or port is wrong, or a firewall drops the connection), so the daemon was never reached"
    )]
    NeverConnected { endpoint: Endpoint },
    /// The daemon took a request and then stopped answering: no complete answer (headers
    /// and body) within the request's deadline, or no answer to a liveness ping while a
    /// long stream was open.
    /// The daemon (or whatever listens there) answered with a body that is not the Engine
    /// API's JSON. `answer` is the start of what it sent, capped.
    #[error(
        "the {} at `{endpoint}` answered, but not with the Engine API's JSON ({problem}): {answer}",
        .endpoint.daemon()
    )]
    BadAnswer {
        endpoint: Endpoint,
        problem: String,
        answer: String,
    },
    /// What answered sent an HTTP head hyper would not read (two `Content-Length` headers
    /// that differ, a status line that is not HTTP, headers past the limit): named with
    /// what was wrong, never a vague failure to talk.
    #[error("the {} at `{endpoint}` sent a malformed HTTP answer: {problem}", .endpoint.daemon())]
    MalformedAnswer { endpoint: Endpoint, problem: String },
    /// An exec's output ended but the daemon gives no exit code for it: envctl never
    /// guesses one.
    #[error(
        "the {} at `{endpoint}` gave no exit code for the command{}",
        .endpoint.daemon(),
        if *still_running { " (its output ended while it still runs)" } else { "" }
    )]
    ExitCodeUnknown {
        endpoint: Endpoint,
        still_running: bool,
    },
    /// `DOCKER_HOST=unix://PATH` names something that is not a socket.
    #[error("`{path}` is not a socket (it is {what}), so no daemon can answer there")]
    NotASocket { path: String, what: &'static str },
    /// A name or id that would change the request's path (`""`, `.`, `x/../..`, `?`):
    /// refused before anything is sent.
    #[error("`{value}` is not a valid {what} for the Docker Engine API")]
    InvalidReference { what: &'static str, value: String },
    #[error("`{endpoint}` uses a scheme envctl does not support")]
    UnsupportedHost { endpoint: Endpoint },
    /// An `ssh://` endpoint with a word that must not reach ssh (a socket path the far
    /// side's shell would run, a user name with shell syntax, a password): refused before
    /// ssh runs (`engine::connector::SshRefusal`).
    #[error("envctl does not run ssh for `{endpoint}`: {refusal}")]
    SshEndpoint {
        endpoint: Endpoint,
        refusal: super::connector::SshRefusal,
    },
    /// A TLS file the choice names (`ca.pem`, `cert.pem`, `key.pem`) cannot be used:
    /// nothing is sent, in TLS or in cleartext.
    #[error("cannot reach `{endpoint}` over TLS ({why}): `{}` {problem}", .path.display())]
    TlsFiles {
        endpoint: String,
        path: std::path::PathBuf,
        problem: String,
        why: String,
    },
    /// TLS was asked for and the endpoint speaks plain HTTP, or the other way round.
    #[error("{}", .mismatch.said(.endpoint))]
    TlsMismatch {
        endpoint: Endpoint,
        mismatch: TlsMismatch,
    },
    /// The TLS handshake failed: the daemon's certificate, or envctl's, was refused.
    #[error("the TLS handshake with `{endpoint}` failed: {source}")]
    TlsHandshake {
        endpoint: Endpoint,
        #[source]
        source: rustls::Error,
    },
    /// `ssh` could not run, or ended before the daemon on the far side answered.
    #[error("cannot reach `{endpoint}` through ssh: {failure}")]
    Ssh {
        endpoint: Endpoint,
        failure: super::connector::ConnectFailure,
    },
    #[error("the {} at `{endpoint}` answered {status}: {message}", .endpoint.daemon())]
    Daemon {
        endpoint: Endpoint,
        status: u16,
        message: String,
    },
    /// The daemon would not start a container, for a cause its message names. Worded as
    /// [`EngineError::Daemon`]: only the cause is typed.
    #[error("the {} at `{endpoint}` answered {status}: {message}", .endpoint.daemon())]
    StartRefused {
        endpoint: Endpoint,
        status: u16,
        message: String,
        refusal: StartRefusal,
    },
    #[error("cannot pull `{image}` from {registry}: {message}")]
    Pull {
        engine: EngineKind,
        image: String,
        registry: String,
        failure: super::pull::PullFailure,
        message: String,
    },
    #[error("cannot write the container's output")]
    Output {
        #[source]
        source: std::io::Error,
    },
    #[error("the image `{image}` is not present locally")]
    ImageMissing { image: String, engine: EngineKind },
    #[error("the container name `{name}` is already in use")]
    NameConflict {
        name: String,
        message: String,
        engine: EngineKind,
    },
    #[error("envctl built an invalid request: {message}")]
    InvalidBody { message: String },
    /// envctl itself has no file descriptor left for another connection (`EMFILE`): its
    /// own limit, not anything the daemon did.
    #[error(
        "envctl has used up its own limit of open files{} and cannot open another connection to the {} at `{endpoint}`",
        .limit.map_or_else(String::new, |limit| format!(" ({limit}, `ulimit -n`)")),
        .endpoint.daemon()
    )]
    TooManyOpenFiles {
        endpoint: Endpoint,
        /// The soft limit on open files, when `/proc/self/limits` says.
        limit: Option<u64>,
        #[source]
        source: bollard::errors::Error,
    },
    #[error("cannot talk to the {} at `{endpoint}`", .endpoint.daemon())]
    Other {
        endpoint: Endpoint,
        #[source]
        source: bollard::errors::Error,
    },
    /// The daemon took the request and then stopped answering: headers or a body that
    /// never came within the request's deadline, or a stream that broke its liveness rule.
    /// The one variant for both, so every command words it the same way.
    #[error("the {} at `{endpoint}` stopped answering `{request}`: {detail}", .endpoint.daemon())]
    StoppedAnswering {
        endpoint: Endpoint,
        request: String,
        detail: String,
    },
}

/// Which side spoke TLS when the other did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMismatch {
    /// envctl sent a TLS hello (TLS was asked for) and the endpoint answered in plain HTTP:
    /// the docker CLI's "server gave HTTP response to HTTPS client".
    PlainEndpoint,
    /// envctl sent plain HTTP (no TLS was asked for) to an endpoint that speaks TLS.
    TlsEndpoint,
}

impl TlsMismatch {
    fn said(self, endpoint: &Endpoint) -> String {
        match self {
            TlsMismatch::PlainEndpoint => format!(
                "the server at `{endpoint}` gave a plain HTTP answer to envctl's TLS hello: it does not speak TLS, and envctl does not fall back to cleartext"
            ),
            TlsMismatch::TlsEndpoint => format!(
                "the server at `{endpoint}` speaks TLS, and envctl was not asked to use TLS there"
            ),
        }
    }
}

/// Why the daemon would not start a container, as far as only its message can tell: the
/// Engine API answers all of these with status 500.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartRefusal {
    /// No runtime, CDI spec or hook can give the container GPUs
    /// (`could not select device driver "" with capabilities: [[gpu]]`).
    NoGpuDriver,
    /// A published host port is taken (`address already in use`).
    PortInUse,
    /// The engine's CDI specs have no device of a name the request gives
    /// (`unresolvable CDI devices nvidia.com/gpu=7`): the name it could not resolve.
    UnresolvableCdiDevice { devices: String },
    /// runc could not set a resource limit (`error setting rlimit type 8`), or was refused
    /// an operation (`operation not permitted`), which at start is a ulimit raised past
    /// what the daemon may set. `resource` is the limit's name when the message says which.
    LimitRefused { resource: Option<String> },
    /// runc could not give the container the capabilities it asks for (`unable to apply
    /// caps: operation not permitted`): the daemon lacks them itself (a daemon in a
    /// container, a sandbox), which `cap_add = ["ALL"]` meets first.
    CapabilitiesRefused,
}

/// Linux's resource-limit numbers (`RLIMIT_*` in `<sys/resource.h>`), as Docker names them.
const RLIMIT_NAMES: [&str; 16] = [
    "cpu",
    "fsize",
    "data",
    "stack",
    "core",
    "rss",
    "nproc",
    "nofile",
    "memlock",
    "as",
    "locks",
    "sigpending",
    "msgqueue",
    "nice",
    "rtprio",
    "rttime",
];

/// What a refused start asked the runtime for, read back from the created container: the
/// facts that tell runc's refusals apart, where its words alone would have to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartRequest {
    /// The capabilities it adds (`HostConfig.CapAdd`).
    pub capabilities: Vec<String>,
    /// The ulimits it sets (`HostConfig.Ulimits`), by their names in a profile (`nofile`).
    pub ulimits: Vec<String>,
}

impl StartRefusal {
    /// The cause of a refused start, if it is one envctl knows: from what the container
    /// asked for (`request`, `None` when it could not be read back) and, where that cannot
    /// tell, the daemon's words.
    ///
    /// The Engine API answers every failed start with a bare 500 and a message: no code,
    /// no field names the cause (Docker 19.03 to 28, Podman 4 and 5). So the causes below
    /// that only the daemon knows are read from the words its code always writes, and the
    /// runtime's refusals are told apart by the request first.
    pub fn recognise(message: &str, request: Option<&StartRequest>) -> Option<Self> {
        // Docker's daemon (`daemon/devices.go`, Docker 19.03 to 28) when no device driver
        // takes a GPU request; nothing else in the answer says it.
        if message.contains("could not select device driver") {
            Some(StartRefusal::NoGpuDriver)
        // The kernel's EADDRINUSE, as Go spells it, through docker-proxy (Docker 20.10 to
        // 28), rootlesskit and Podman's port forwarder alike.
        } else if message.contains("address already in use") {
            Some(StartRefusal::PortInUse)
        // Docker 25 to 28 and Podman 4.6 to 5 (`tags.cncf.io/container-device-interface`):
        // the names it could not resolve exist only in this sentence.
        } else if let Some((_, devices)) = message.split_once("unresolvable CDI devices ") {
            Some(StartRefusal::UnresolvableCdiDevice {
                devices: devices.trim().to_string(),
            })
        // The kernel's EPERM as runc words it, or a limit refused (runc's `error setting
        // rlimit`, crun's `setrlimit`).
        } else if message.contains("operation not permitted") || message.contains("rlimit") {
            runtime_refusal(message, request)
        } else {
            None
        }
    }
}

/// Which of the container's asks the runtime refused with EPERM. The request decides when
/// it asked for only one of capabilities and ulimits; where it asked for both, or could not
/// be read back, runc's own words name the step that failed (`unable to apply caps`,
/// `error setting rlimit type 8`: runc 1.0 to 1.2, under Docker 20.10 to 28 and Podman 4):
/// no other signal says which of the two it was.
fn runtime_refusal(message: &str, request: Option<&StartRequest>) -> Option<StartRefusal> {
    let limit = || StartRefusal::LimitRefused {
        resource: refused_limit(message, request),
    };
    let asked = request.map(|request| {
        (
            !request.capabilities.is_empty(),
            !request.ulimits.is_empty(),
        )
    });
    match asked {
        Some((true, false)) => Some(StartRefusal::CapabilitiesRefused),
        Some((false, true)) => Some(limit()),
        _ if message.contains("apply caps") => Some(StartRefusal::CapabilitiesRefused),
        _ if message.contains("rlimit") => Some(limit()),
        // Neither asked for, or both with no word of which: the refusal is another's
        // (seccomp, an LSM), and no hint is better than a wrong one.
        Some(_) => None,
        // Nothing known of the request: a ulimit is what a bare EPERM at start most often
        // is (Podman 4.3's default nofile and nproc in a sandbox).
        None => Some(limit()),
    }
}

/// The ulimit refused: the only one the container sets, else the one runc names.
fn refused_limit(message: &str, request: Option<&StartRequest>) -> Option<String> {
    match request.map(|request| request.ulimits.as_slice()) {
        Some([only]) => Some(only.clone()),
        _ => rlimit_resource(message),
    }
}

/// The limit runc names in `error setting rlimit type 8`, by its Linux name.
fn rlimit_resource(message: &str) -> Option<String> {
    let (_, after) = message.split_once("rlimit type ")?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    let number: usize = digits.parse().ok()?;
    RLIMIT_NAMES.get(number).map(|name| name.to_string())
}

impl EngineError {
    /// Whether the daemon refused a create for a missing `--init` binary (Podman answers
    /// 500 "container-init binary not found" where its catatonit is not installed): the
    /// profile's settings, not the daemon, are what to look at. Podman 4 and 5 answer every
    /// failed create with a bare 500 and no field naming the cause, so these words
    /// (`libpod/container_internal_linux.go`) are the only signal there is.
    pub fn is_init_missing(&self) -> bool {
        matches!(
            self,
            EngineError::Daemon { status: 500, message, .. }
                if message.contains("container-init binary not found")
        )
    }

    /// Sorts a failed start: the daemon's answer, with the cause its message names typed.
    /// `request`: what the container asks of the runtime, `None` when unknown.
    pub fn classify_start(
        endpoint: &Endpoint,
        error: bollard::errors::Error,
        timeout_seconds: u64,
        request: Option<&StartRequest>,
    ) -> Self {
        match EngineError::classify(endpoint, error, timeout_seconds) {
            EngineError::Daemon {
                endpoint,
                status,
                message,
            } => match StartRefusal::recognise(&message, request) {
                Some(refusal) => EngineError::StartRefused {
                    endpoint,
                    status,
                    message,
                    refusal,
                },
                None => EngineError::Daemon {
                    endpoint,
                    status,
                    message,
                },
            },
            other => other,
        }
    }

    /// Sorts a bollard error into a named cause, walking its sources for the I/O error.
    pub fn classify(
        endpoint: &Endpoint,
        error: bollard::errors::Error,
        timeout_seconds: u64,
    ) -> Self {
        use bollard::errors::Error as Bollard;
        let endpoint = endpoint.clone();
        if let Some(failure) = super::connector::failure_in(&error) {
            use super::connector::ConnectFailure;
            return match failure {
                ConnectFailure::HttpAnswerToTls => EngineError::TlsMismatch {
                    endpoint,
                    mismatch: TlsMismatch::PlainEndpoint,
                },
                ConnectFailure::Handshake(source) => EngineError::TlsHandshake { endpoint, source },
                ConnectFailure::NeverConnected => EngineError::NeverConnected { endpoint },
                failure => EngineError::Ssh { endpoint, failure },
            };
        }
        // A daemon's own answers (status, JSON) carry no hyper error: this is the answer's
        // HTTP itself.
        if let Some(problem) = malformed_http(&error) {
            return EngineError::MalformedAnswer { endpoint, problem };
        }
        match error {
            Bollard::SocketNotFoundError(path) => EngineError::SocketMissing {
                path,
                engine: endpoint.kind,
            },
            Bollard::RequestTimeoutError => EngineError::Timeout {
                endpoint,
                seconds: timeout_seconds,
            },
            Bollard::UnsupportedURISchemeError { .. } => EngineError::UnsupportedHost { endpoint },
            Bollard::DockerResponseServerError {
                status_code,
                message,
            } => EngineError::Daemon {
                endpoint,
                status: status_code,
                message: capped(said(status_code, message)),
            },
            Bollard::JsonDataError {
                message, contents, ..
            } => EngineError::BadAnswer {
                endpoint,
                problem: message,
                answer: capped(contents),
            },
            other if io_error(&other).and_then(std::io::Error::raw_os_error) == Some(EMFILE) => {
                EngineError::TooManyOpenFiles {
                    endpoint,
                    limit: open_files_limit(),
                    source: other,
                }
            }
            other => match io_error_kind(&other) {
                Some(std::io::ErrorKind::PermissionDenied) => EngineError::PermissionDenied {
                    endpoint,
                    source: other,
                },
                // The socket file went away after envctl connected once (the daemon
                // stopped and removed it): the same cause as a socket missing at start.
                Some(std::io::ErrorKind::NotFound) if endpoint.address.starts_with("unix://") => {
                    EngineError::SocketMissing {
                        path: endpoint.address.trim_start_matches("unix://").to_string(),
                        engine: endpoint.kind,
                    }
                }
                Some(std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound) => {
                    EngineError::ConnectionRefused {
                        endpoint,
                        source: other,
                    }
                }
                _ => EngineError::Other {
                    endpoint,
                    source: other,
                },
            },
        }
    }

    /// The fix: a command to run or a variable to set, for the engine that answered (both
    /// Docker's and Podman's before one did).
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            EngineError::Choice(choice) => choice.hint(),
            EngineError::SocketMissing { engine, .. } => format!(
                "start {}, or point DOCKER_HOST at your engine's socket ({})",
                engine.start_command("start"),
                engine.rootless_sockets()
            ),
            EngineError::PermissionDenied { endpoint, .. } => endpoint.kind.permission_fix().into(),
            EngineError::ConnectionRefused { endpoint, .. } => match endpoint.other_machine() {
                Some(_) => format!(
                    "nothing listens at `{endpoint}`: check the host and port (`docker -H {endpoint} info` cannot connect either), or {}",
                    endpoint.where_it_runs(format!("restart {}", endpoint.kind.start_command("restart")))
                ),
                None => format!(
                    "the socket or port exists but nothing listens: restart {} or check DOCKER_HOST",
                    endpoint.kind.start_command("restart")
                ),
            },
            EngineError::NeverConnected { endpoint } => format!(
                "check the address and port, and that the host is up and reachable from here: `docker -H {endpoint} info` cannot connect either"
            ),
            EngineError::Timeout { endpoint, .. } | EngineError::StoppedAnswering { endpoint, .. } => {
                format!(
                    "the {} is overloaded or hung: {}",
                    endpoint.daemon(),
                    endpoint.where_it_runs(format!("check {}", endpoint.kind.service_logs()))
                )
            }
            EngineError::BadAnswer { endpoint, .. } => format!(
                "something other than a Docker daemon or Podman service may listen at `{endpoint}`: check DOCKER_HOST, then {}",
                endpoint.where_it_runs(endpoint.kind.service_logs().to_string())
            ),
            EngineError::MalformedAnswer { endpoint, .. } => format!(
                "something other than a Docker daemon or Podman service, or a proxy in between, answers at `{endpoint}`: check DOCKER_HOST, then {}",
                endpoint.where_it_runs(endpoint.kind.service_logs().to_string())
            ),
            EngineError::NotASocket { .. } => {
                "point DOCKER_HOST at the engine's socket: unix:///var/run/docker.sock or unix:///run/podman/podman.sock (rootless: unix://$XDG_RUNTIME_DIR/docker.sock or unix://$XDG_RUNTIME_DIR/podman/podman.sock)".into()
            }
            EngineError::InvalidReference { .. } => {
                "names and ids are letters, digits, `_`, `.` and `-`, starting with a letter or digit; `envctl ps -a` lists the containers".into()
            }
            EngineError::UnsupportedHost { .. } => {
                "use unix:///path/to/docker.sock, tcp://HOST:PORT or ssh://[USER@]HOST[:PORT]".into()
            }
            EngineError::SshEndpoint { refusal, .. } => match refusal {
                super::connector::SshRefusal::Password => {
                    "leave the password out: `ssh://USER@HOST`; ssh logs in with a key, the agent, or asks".into()
                }
                _ => "write the endpoint as `ssh://[USER@]HOST[:PORT][/SOCKET]` with plain words, or name the host in ~/.ssh/config and use `ssh://ALIAS`".into(),
            },
            EngineError::TlsFiles { path, .. } => format!(
                "DOCKER_CERT_PATH (else ~/.docker) must hold the daemon's ca.pem, and cert.pem and key.pem for envctl; for a context, `docker context inspect` names its files; the file in question: {}",
                path.display()
            ),
            EngineError::TlsMismatch { endpoint, mismatch: TlsMismatch::PlainEndpoint } => format!(
                "if `{endpoint}` is meant to be plain HTTP, run without TLS: `unset DOCKER_TLS_VERIFY DOCKER_TLS` (for a context, recreate it without TLS files); otherwise point at the daemon's TLS port"
            ),
            EngineError::TlsMismatch { mismatch: TlsMismatch::TlsEndpoint, .. } => {
                "use TLS there: `export DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=FOLDER` with the daemon's ca.pem and your cert.pem and key.pem in FOLDER (or a context made with `docker context create NAME --docker host=…,ca=…,cert=…,key=…`)".into()
            }
            EngineError::TlsHandshake { source, .. } => match source {
                rustls::Error::AlertReceived(_) => "the daemon refused envctl's client certificate (it runs with --tlsverify): put your cert.pem and key.pem, signed by the daemon's CA, in DOCKER_CERT_PATH".into(),
                _ => "the daemon's certificate is not signed by DOCKER_CERT_PATH's ca.pem or names another host: check the CA, and that the address is one the certificate names".into(),
            },
            EngineError::Ssh { endpoint, failure } => match failure {
                super::connector::ConnectFailure::SshMissing(_) => {
                    "install the OpenSSH client (`ssh` on PATH), as the docker CLI needs it for ssh://".into()
                }
                _ => format!(
                    "try the same as the docker CLI: `docker -H {endpoint} info`; ssh must log in without a password prompt (a key, the agent, ~/.ssh/config) and `docker` must be on the far side's PATH"
                ),
            },
            EngineError::Pull { failure, image, registry, engine, .. } => {
                let cli = engine.cli();
                match failure {
                    super::pull::PullFailure::NotFound => format!("check the image name and tag; list the tags the registry has for `{image}`, or fix `image` in the profile"),
                    super::pull::PullFailure::Unauthorized => format!("log in first: `{cli} login {registry}`"),
                    super::pull::PullFailure::Unreachable => format!("{registry} cannot be reached: check the network, a proxy, or pull on a connected machine and `{cli} save`/`{cli} load` the image"),
                    super::pull::PullFailure::Stalled => format!("{registry} accepts connections but sends nothing: check the registry or a proxy in between, then retry (ENVCTL_PULL_STALL_SECONDS sets how long envctl waits)"),
                    super::pull::PullFailure::Other => return None,
                }
            }
            EngineError::ImageMissing { image, engine } => format!(
                "pull it first: `{} pull {image}` (or `envctl up --pull missing`)",
                engine.cli()
            ),
            EngineError::NameConflict { name, engine, .. } => format!(
                "remove it with `{} rm -f {name}`, or choose another name with `--name`",
                engine.cli()
            ),
            EngineError::Output { .. } | EngineError::ExitCodeUnknown { .. } => return None,
            EngineError::TooManyOpenFiles { .. } => {
                "raise the limit in this shell (`ulimit -n 65536`) or ask about fewer containers at once; the daemon is not at fault".into()
            }
            EngineError::InvalidBody { .. } => {
                "this is a bug in envctl: please report it with `envctl up --dry-run --json` output".into()
            }
            // A refused start's fix depends on the request: `up` words it.
            EngineError::Daemon { .. }
            | EngineError::StartRefused { .. }
            | EngineError::Other { .. } => return None,
        })
    }

    /// A short stable name for the cause, for JSON: snake_case, like every kind envctl
    /// writes (the same words as `stats`' failure kinds).
    pub fn kind(&self) -> &'static str {
        match self {
            EngineError::SocketMissing { .. } => "socket_missing",
            EngineError::PermissionDenied { .. } => "permission_denied",
            EngineError::ConnectionRefused { .. } => "connection_refused",
            EngineError::Timeout { .. } => "timeout",
            EngineError::NeverConnected { .. } => "never_connected",
            EngineError::BadAnswer { .. } => "bad_answer",
            EngineError::MalformedAnswer { .. } => "malformed_answer",
            EngineError::NotASocket { .. } => "not_a_socket",
            EngineError::InvalidReference { .. } => "invalid_reference",
            EngineError::ExitCodeUnknown { .. } => "exit_code_unknown",
            EngineError::UnsupportedHost { .. } => "unsupported_host",
            EngineError::SshEndpoint { .. } => "ssh_endpoint_refused",
            EngineError::TlsFiles { .. } => "tls_files",
            EngineError::TlsMismatch { .. } => "tls_mismatch",
            EngineError::TlsHandshake { .. } => "tls_handshake",
            EngineError::Ssh { .. } => "ssh_failed",
            EngineError::Choice(_) => "daemon_choice",
            EngineError::Daemon { .. } | EngineError::StartRefused { .. } => "daemon_error",
            EngineError::Pull { .. } => "pull_failed",
            EngineError::ImageMissing { .. } => "image_missing",
            EngineError::NameConflict { .. } => "name_conflict",
            EngineError::InvalidBody { .. } => "invalid_body",
            EngineError::Output { .. } => "output",
            EngineError::Other { .. } => "other",
            EngineError::TooManyOpenFiles { .. } => "too_many_open_files",
            EngineError::StoppedAnswering { .. } => "stopped_answering",
        }
    }
}

/// What was malformed in an HTTP answer hyper refused to read, told by hyper's own
/// predicates (its parse error's kind is private; its words are not read).
fn malformed_http(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = current {
        if let Some(hyper) = error.downcast_ref::<hyper::Error>()
            && hyper.is_parse()
        {
            return Some(format!("{hyper} ({})", parse_failure(hyper)));
        }
        current = error.source();
    }
    None
}

/// What a parse error of hyper's means for the answer, by the part of the head it is in.
fn parse_failure(error: &hyper::Error) -> &'static str {
    if error.is_parse_status() {
        "its status line is not HTTP's: something other than an HTTP server answers here"
    } else if error.is_parse_too_large() {
        "its head is larger than any daemon's: something other than the Engine API answers here"
    } else {
        // What is left of a response head is its version and its headers, and a daemon's
        // answer fails on the headers that give its length.
        "a header hyper cannot take: where Content-Length headers differ, one is not a number, or Transfer-Encoding is not chunked last, the answer's length cannot be known"
    }
}

/// A daemon's message for an error status, or what its absence means: never "answered
/// 302: " and nothing more.
pub(crate) fn said(status: u16, message: String) -> String {
    match (message.trim().is_empty(), status) {
        (false, _) => message,
        (true, 300..=399) => "a redirect with no message; the Engine API never redirects, so something else answers at this address".into(),
        (true, _) => "no message".into(),
    }
}

/// How much of a daemon's own text (an error message, a body that is not JSON) an error
/// keeps: a 50 MB answer is not worth 50 MB of terminal.
pub const MESSAGE_CAP: usize = 4096;

/// `text` cut to [`MESSAGE_CAP`] bytes (at a character boundary), saying how much was cut.
pub fn capped(text: String) -> String {
    if text.len() <= MESSAGE_CAP {
        return text;
    }
    let mut end = MESSAGE_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… {} bytes more", &text[..end], text.len() - end)
}

fn io_error_kind(error: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    io_error(error).map(std::io::Error::kind)
}

/// The first I/O error in `error`'s chain.
fn io_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = current {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        // bollard's `IOError` is transparent: its `source()` skips the I/O error itself.
        if let Some(bollard::errors::Error::IOError { err }) =
            error.downcast_ref::<bollard::errors::Error>()
        {
            return Some(err);
        }
        current = error.source();
    }
    None
}

/// Linux's "too many open files" for this process (`EMFILE`).
const EMFILE: i32 = 24;

/// This process's soft limit on open files, read once when envctl connects (see
/// [`note_open_files_limit`]): once the limit is used up, not even `/proc/self/limits`
/// can be opened to say what it is.
static OPEN_FILES_LIMIT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();

/// Reads this process's soft limit on open files (`/proc/self/limits`: `Max open files
/// 1024  1048576  files`) while a descriptor is still free to read it.
pub fn note_open_files_limit() {
    OPEN_FILES_LIMIT.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/self/limits").ok()?;
        parse_open_files_limit(&text)
    });
}

/// The limit [`note_open_files_limit`] read; `None` where it could not be.
fn open_files_limit() -> Option<u64> {
    note_open_files_limit();
    OPEN_FILES_LIMIT.get().copied().flatten()
}

fn parse_open_files_limit(limits: &str) -> Option<u64> {
    limits
        .lines()
        .find_map(|line| line.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Advice to restart a service or read its logs names the machine it must be run on
    /// when the daemon is another machine's (issue 40: an unreachable `tcp://` host got
    /// this machine's `systemctl`), and stays as it was for a socket or loopback.
    #[test]
    fn service_advice_names_the_machine_the_daemon_runs_on() {
        let refused = |address: &str| {
            EngineError::ConnectionRefused {
                endpoint: Endpoint {
                    address: address.into(),
                    kind: EngineKind::DockerEngine,
                },
                source: bollard::errors::Error::IOError {
                    err: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
                },
            }
            .hint()
            .unwrap_or_default()
        };
        for (address, machine) in [
            ("tcp://gpu1:2375", "gpu1"),
            ("tcp://10.0.0.7:2376", "10.0.0.7"),
            ("ssh://me@gpu2", "gpu2"),
            ("tcp://[fd00::7]:2376", "fd00::7"),
        ] {
            let hint = refused(address);
            assert!(
                hint.contains(&format!("on `{machine}`, where that daemon runs"))
                    && hint.contains(&format!("`docker -H {address} info`")),
                "{address}: {hint}"
            );
        }
        for address in [
            "unix:///var/run/docker.sock",
            "tcp://127.0.0.1:2375",
            "tcp://localhost:2375",
            "tcp://[::1]:2375",
        ] {
            let hint = refused(address);
            assert!(
                !hint.contains("where that daemon runs"),
                "{address}: {hint}"
            );
            assert!(
                hint.contains("systemctl restart docker"),
                "{address}: {hint}"
            );
        }
        let hung = EngineError::Timeout {
            endpoint: Endpoint {
                address: "tcp://gpu1:2376".into(),
                kind: EngineKind::Podman,
            },
            seconds: 15,
        };
        assert!(
            hung.hint().is_some_and(|hint| hint.contains(
                "on `gpu1`, where that daemon runs: check `systemctl status podman.socket"
            )),
            "{:?}",
            hung.hint()
        );
    }

    #[test]
    fn an_empty_error_answer_still_says_something() {
        assert!(said(302, String::new()).contains("never redirects"));
        assert_eq!(said(500, " ".into()), "no message");
        assert_eq!(said(404, "no such container".into()), "no such container");
    }

    #[test]
    fn running_out_of_file_descriptors_is_envctls_own_limit() {
        let endpoint = Endpoint {
            address: "unix:///var/run/docker.sock".into(),
            kind: EngineKind::DockerEngine,
        };
        let error = EngineError::classify(
            &endpoint,
            bollard::errors::Error::IOError {
                err: std::io::Error::from_raw_os_error(EMFILE),
            },
            15,
        );
        assert!(
            matches!(error, EngineError::TooManyOpenFiles { .. }),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .contains("envctl has used up its own limit of open files")
        );
        assert!(error.hint().is_some_and(|hint| hint.contains("ulimit -n")));
        assert_eq!(
            parse_open_files_limit(
                "Limit                     Soft Limit           Hard Limit           Units\nMax open files            64                   1048576              files\n"
            ),
            Some(64)
        );
    }

    fn io(kind: std::io::ErrorKind) -> bollard::errors::Error {
        bollard::errors::Error::IOError {
            err: std::io::Error::new(kind, "os error"),
        }
    }

    #[test]
    fn a_unix_socket_that_vanished_is_named_missing() {
        let error = EngineError::classify(
            &Endpoint::unidentified("unix:///run/docker.sock"),
            io(std::io::ErrorKind::NotFound),
            3,
        );
        assert!(
            matches!(&error, EngineError::SocketMissing { path, .. } if path == "/run/docker.sock"),
            "{error:?}"
        );
        assert_eq!(error.kind(), "socket_missing");
    }

    fn start_failure(message: &str) -> EngineError {
        refused_start(message, None)
    }

    fn refused_start(message: &str, request: Option<&StartRequest>) -> EngineError {
        EngineError::classify_start(
            &Endpoint {
                address: "unix:///run/docker.sock".into(),
                kind: EngineKind::DockerEngine,
            },
            bollard::errors::Error::DockerResponseServerError {
                status_code: 500,
                message: message.into(),
            },
            3,
            request,
        )
    }

    #[test]
    fn a_refused_start_names_its_cause_and_keeps_the_daemons_words() {
        let gpu = start_failure("could not select device driver \"\" with capabilities: [[gpu]]");
        assert!(
            matches!(
                &gpu,
                EngineError::StartRefused {
                    refusal: StartRefusal::NoGpuDriver,
                    status: 500,
                    ..
                }
            ),
            "{gpu:?}"
        );
        assert_eq!(
            gpu.to_string(),
            "the Docker daemon at `unix:///run/docker.sock` answered 500: could not select device driver \"\" with capabilities: [[gpu]]"
        );
        assert_eq!(gpu.kind(), "daemon_error");
        let port = start_failure(
            "driver failed programming external connectivity: listen tcp4 0.0.0.0:8888: bind: address already in use",
        );
        assert!(
            matches!(
                &port,
                EngineError::StartRefused {
                    refusal: StartRefusal::PortInUse,
                    ..
                }
            ),
            "{port:?}"
        );
        let limit = start_failure(
            "OCI runtime create failed: runc create failed: unable to start container process: error during container init: error setting rlimit type 8: operation not permitted: unknown",
        );
        assert!(
            matches!(&limit, EngineError::StartRefused { refusal: StartRefusal::LimitRefused { resource: Some(resource) }, .. } if resource == "memlock"),
            "{limit:?}"
        );
        // Podman 5.4, a `gpus` name its CDI specs do not have.
        let cdi =
            start_failure("setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=7");
        assert!(
            matches!(&cdi, EngineError::StartRefused { refusal: StartRefusal::UnresolvableCdiDevice { devices }, .. } if devices == "nvidia.com/gpu=7"),
            "{cdi:?}"
        );
        let eperm = start_failure("operation not permitted");
        assert!(
            matches!(
                &eperm,
                EngineError::StartRefused {
                    refusal: StartRefusal::LimitRefused { resource: None },
                    ..
                }
            ),
            "{eperm:?}"
        );
        // Issue 39: a refused `cap_add` is no ulimit.
        let caps = start_failure(
            "OCI runtime create failed: runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown",
        );
        assert!(
            matches!(
                &caps,
                EngineError::StartRefused {
                    refusal: StartRefusal::CapabilitiesRefused,
                    ..
                }
            ),
            "{caps:?}"
        );
        let other = start_failure("something else");
        assert!(matches!(&other, EngineError::Daemon { .. }), "{other:?}");
    }

    fn refusal(message: &str, capabilities: &[&str], ulimits: &[&str]) -> Option<StartRefusal> {
        let request = StartRequest {
            capabilities: capabilities.iter().map(|name| name.to_string()).collect(),
            ulimits: ulimits.iter().map(|name| name.to_string()).collect(),
        };
        match refused_start(message, Some(&request)) {
            EngineError::StartRefused { refusal, .. } => Some(refusal),
            _ => None,
        }
    }

    /// A runtime's EPERM is told apart by what the container asked for; runc's words decide
    /// only where it asked for both, and a refusal of neither is no guessed ulimit.
    #[test]
    fn a_refused_start_is_told_apart_by_what_the_container_asked_for() {
        // crun says no step; the request says which.
        let bare = "crun: operation not permitted: OCI permission denied";
        assert_eq!(
            refusal(bare, &["ALL"], &[]),
            Some(StartRefusal::CapabilitiesRefused)
        );
        assert_eq!(
            refusal(bare, &[], &["memlock"]),
            Some(StartRefusal::LimitRefused {
                resource: Some("memlock".into())
            })
        );
        assert_eq!(refusal(bare, &[], &[]), None);
        assert_eq!(refusal(bare, &["ALL"], &["nofile"]), None);
        // Both asked for: runc's step names which.
        let caps = "runc create failed: unable to apply caps: operation not permitted";
        assert_eq!(
            refusal(caps, &["ALL"], &["nofile"]),
            Some(StartRefusal::CapabilitiesRefused)
        );
        let limit = "runc create failed: error setting rlimit type 7: operation not permitted";
        assert_eq!(
            refusal(limit, &["ALL"], &["nofile", "nproc"]),
            Some(StartRefusal::LimitRefused {
                resource: Some("nofile".into())
            })
        );
        // The request outweighs the words: it asked for capabilities only.
        assert_eq!(
            refusal(limit, &["SYS_NICE"], &[]),
            Some(StartRefusal::CapabilitiesRefused)
        );
    }

    /// An HTTP answer hyper cannot read, parsed by hyper itself over an in-memory pipe.
    fn malformed(answer: &'static [u8]) -> Option<String> {
        use tokio::io::AsyncWriteExt as _;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (client, mut server) = tokio::io::duplex(64 * 1024);
            let (mut sender, connection) = hyper::client::conn::http1::handshake::<
                _,
                http_body_util::Empty<bytes::Bytes>,
            >(hyper_util::rt::TokioIo::new(client))
            .await
            .unwrap();
            tokio::spawn(async move {
                let _ = connection.await;
            });
            tokio::spawn(async move {
                let _ = server.write_all(answer).await;
                let _ = server.flush().await;
                // Held open: the answer's head is what fails, not its end.
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            });
            let request = http::Request::get("/_ping")
                .body(http_body_util::Empty::new())
                .unwrap();
            let error = sender.send_request(request).await.unwrap_err();
            malformed_http(&error)
        })
    }

    #[test]
    fn a_malformed_answer_is_named_by_hypers_predicates() {
        let lengths =
            malformed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 45\r\n\r\nOK")
                .unwrap();
        assert!(
            lengths.contains("Content-Length headers differ"),
            "{lengths}"
        );
        let status = malformed(b"HTTP/1.1 2x0 OK\r\n\r\n").unwrap();
        assert!(status.contains("status line is not HTTP's"), "{status}");
        let large: &'static [u8] = Box::leak(
            format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(600 * 1024))
                .into_bytes()
                .into_boxed_slice(),
        );
        let large = malformed(large).unwrap();
        assert!(large.contains("head is larger"), "{large}");
    }

    #[test]
    fn refused_and_forbidden_keep_their_own_causes() {
        let refused = EngineError::classify(
            &Endpoint::unidentified("unix:///run/docker.sock"),
            io(std::io::ErrorKind::ConnectionRefused),
            3,
        );
        assert_eq!(refused.kind(), "connection_refused");
        let forbidden = EngineError::classify(
            &Endpoint::unidentified("unix:///run/docker.sock"),
            io(std::io::ErrorKind::PermissionDenied),
            3,
        );
        assert_eq!(forbidden.kind(), "permission_denied");
        let tcp = EngineError::classify(
            &Endpoint::unidentified("tcp://127.0.0.1:2375"),
            io(std::io::ErrorKind::NotFound),
            3,
        );
        assert_eq!(tcp.kind(), "connection_refused");
    }

    /// Each error names the engine that answered, and its hint that engine's commands;
    /// before one answered, the daemon is named as such and both engines' fixes are given.
    #[test]
    fn messages_and_hints_name_the_engine_that_answered() {
        let at = |kind| Endpoint {
            address: "unix:///run/podman/podman.sock".into(),
            kind,
        };
        let answered = |kind| EngineError::Daemon {
            endpoint: at(kind),
            status: 500,
            message: "boom".into(),
        };
        assert_eq!(
            answered(EngineKind::Podman).to_string(),
            "the Podman service at `unix:///run/podman/podman.sock` answered 500: boom"
        );
        assert_eq!(
            answered(EngineKind::DockerEngine).to_string(),
            "the Docker daemon at `unix:///run/podman/podman.sock` answered 500: boom"
        );
        assert_eq!(
            answered(EngineKind::Unknown).to_string(),
            "the daemon at `unix:///run/podman/podman.sock` answered 500: boom"
        );
        let hung = EngineError::Timeout {
            endpoint: at(EngineKind::Podman),
            seconds: 3,
        };
        let hint = hung.hint().unwrap();
        assert!(hint.contains("journalctl -u podman.service"), "{hint}");
        assert!(!hint.contains("docker"), "{hint}");
        let conflict = EngineError::NameConflict {
            name: "x".into(),
            message: String::new(),
            engine: EngineKind::Podman,
        };
        assert!(conflict.hint().unwrap().contains("`podman rm -f x`"));
        let missing = EngineError::ImageMissing {
            image: "a:1".into(),
            engine: EngineKind::DockerEngine,
        };
        assert!(missing.hint().unwrap().contains("`docker pull a:1`"));
        let unreachable = EngineError::SocketMissing {
            path: "/run/docker.sock".into(),
            engine: EngineKind::Unknown,
        };
        let hint = unreachable.hint().unwrap();
        assert!(
            hint.contains("systemctl start docker") && hint.contains("podman.socket"),
            "{hint}"
        );
    }
}
