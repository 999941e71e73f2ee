//! `envctl stats --serve`: a small HTTP/1.1 server that answers Prometheus scrapes with
//! the latest exposition (`/metrics`), the live dashboard (`/`, one page embedded in the
//! binary), the latest snapshot (`/api/v1/snapshot`) and the recent history
//! (`/api/v1/history?since=N`) as JSON, 404 for anything else, and shuts down when the
//! live loop ends.
//!
//! Each connection is served on a thread of its own, so a client that sends and never
//! reads blocks nobody but itself, and its work and time are bounded: at most
//! [`MAX_REQUESTS_PER_CONNECTION`] requests, [`IO_TIMEOUT`] for each read and write, a
//! request head of at most [`MAX_HEAD_BYTES`], and at most [`MAX_CONNECTIONS`] at once
//! (more are answered 503 and closed). Stopping waits only for the accepting thread, which
//! looks at the stop flag every [`ACCEPT_POLL`]: a connection thread still blocked on its
//! client ends at its own timeout, and never holds the process up.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::error::Error;
use crate::monitor::history::History;
use crate::monitor::{Snapshot, prometheus, record};

/// The dashboard: one page, its styles and script inline, nothing fetched but this
/// server's `/api/v1/…`.
const DASHBOARD: &str = include_str!("../../monitor/dashboard/index.html");

/// What the browser may load for the dashboard: nothing from elsewhere, so a page
/// changed by mistake cannot reach outside either.
const DASHBOARD_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Where `--serve` listens when given no address (dcgm-exporter's port).
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:9400";

/// The most requests one connection gets answered before it is closed: Prometheus makes
/// one a scrape interval; a client pipelining thousands gets this many.
pub const MAX_REQUESTS_PER_CONNECTION: usize = 100;

/// How long one read or write on a connection may wait for the client.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The most connections served at once.
pub const MAX_CONNECTIONS: usize = 32;

/// The longest request line and headers envctl reads.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;

/// How often the accepting thread looks whether it should stop.
const ACCEPT_POLL: Duration = Duration::from_millis(10);

/// What the next requests get, replaced at each interval. The exposition and the JSON
/// are rendered when asked for, outside the lock: an interval nobody asks about costs a
/// clone of the snapshot and a point of history.
struct Published {
    latest: Option<Arc<Snapshot>>,
    /// DCGM's `Hostname` label.
    hostname: String,
    history: History,
    window: Duration,
    /// Listening on a loopback address only: requests must be addressed to it too.
    loopback_only: bool,
}

type Latest = Arc<Mutex<Published>>;

/// The latest snapshot and its history, answered from threads of their own.
pub struct StatsServer {
    latest: Latest,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    address: String,
}

impl StatsServer {
    /// Listens on `address` (port 0 picks a free one) and starts answering, keeping
    /// `window` of history at one point every `interval`; until the first
    /// [`publish`](StatsServer::publish), `/metrics` is empty and the snapshot `{}`.
    pub fn start(
        address: &str,
        window: Duration,
        interval: Duration,
    ) -> Result<StatsServer, Error> {
        let serve_error = |source: std::io::Error| Error::Serve {
            address: address.to_string(),
            source: Box::new(source),
        };
        let listener = TcpListener::bind(address).map_err(serve_error)?;
        // Non-blocking, so that the accepting thread sees the stop flag without a
        // connection to wake it.
        listener.set_nonblocking(true).map_err(serve_error)?;
        let bound = listener
            .local_addr()
            .map_or_else(|_| address.to_string(), |socket| socket.to_string());
        let loopback_only = listener
            .local_addr()
            .is_ok_and(|socket| socket.ip().is_loopback());
        let latest = Arc::new(Mutex::new(Published {
            latest: None,
            hostname: String::new(),
            history: History::new(window, interval),
            window,
            loopback_only,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let latest = Arc::clone(&latest);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("envctl-metrics".into())
                .spawn(move || accept(&listener, &latest, &stop))
                .map_err(Error::Output)?
        };
        Ok(StatsServer {
            latest,
            stop,
            thread: Some(thread),
            address: bound,
        })
    }

    /// The address it listens on, as bound (the port chosen when 0 was asked for).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// What the next requests get: `snapshot` (its exposition labelled with `hostname`,
    /// its JSON), and its moment added to the history.
    pub fn publish(&self, snapshot: &Snapshot, hostname: &str) {
        let shared = Arc::new(snapshot.clone());
        let mut published = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        published.latest = Some(shared);
        if published.hostname != hostname {
            published.hostname = hostname.to_string();
        }
        published.history.push(snapshot);
    }

    /// Stops listening and waits for the accepting thread (at most [`ACCEPT_POLL`]).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until `stop`, each served on a thread of its own.
fn accept(listener: &TcpListener, latest: &Latest, stop: &AtomicBool) {
    let open = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::SeqCst) {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
            // A connection reset before it was accepted, or no file descriptor left for
            // now: the next one may do, and a busy loop must not follow.
            Err(_) => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
        };
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
        let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            let mut stream = stream;
            let _ = stream.write_all(&response(
                503,
                "text/plain; charset=utf-8",
                b"too many connections\n",
                false,
                &[],
            ));
            continue;
        }
        let latest = Arc::clone(latest);
        let connection_open = Arc::clone(&open);
        let spawned = std::thread::Builder::new()
            .name("envctl-metrics-connection".into())
            .spawn(move || {
                serve_connection(stream, &latest);
                connection_open.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Answers the requests of one connection, in order, up to the per-connection bounds. A
/// client that hung up, stalled past [`IO_TIMEOUT`] or sent something that is not HTTP
/// is closed: it is its own problem, and the next scrape gets an answer.
fn serve_connection(stream: TcpStream, latest: &Mutex<Published>) {
    let Ok(reading) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reading);
    let mut writer = stream;
    for answered in 1..=MAX_REQUESTS_PER_CONNECTION {
        let Some(request) = read_head(&mut reader) else {
            return;
        };
        let keep_alive = request.keep_alive && answered < MAX_REQUESTS_PER_CONNECTION;
        let answer = answer(&request, latest);
        let mut bytes = response(
            answer.status,
            answer.content_type,
            &answer.body,
            keep_alive,
            answer.headers,
        );
        if request.head_only {
            bytes.truncate(bytes.len() - answer.body.len());
        }
        if writer.write_all(&bytes).is_err() || !keep_alive {
            return;
        }
    }
}

/// One answer, before it is framed.
struct Answer {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    headers: &'static [(&'static str, &'static str)],
}

const JSON: &str = "application/json";
const TEXT: &str = "text/plain; charset=utf-8";

/// What `request` gets. The JSON is made under the lock (a copy or one pass over the
/// history), so a slow client holds nobody up while its answer is written.
fn answer(request: &RequestHead, latest: &Mutex<Published>) -> Answer {
    let plain = |status, body: &[u8]| Answer {
        status,
        content_type: TEXT,
        body: body.to_vec(),
        headers: &[],
    };
    let json = |body: String| Answer {
        status: 200,
        content_type: JSON,
        body: body.into_bytes(),
        headers: &[("Cache-Control", "no-store")],
    };
    let published = || latest.lock().unwrap_or_else(PoisonError::into_inner);
    // DNS rebinding: a web page whose name is made to resolve to 127.0.0.1 could read the
    // dashboard's data from the user's browser. Its requests carry that name as `Host`;
    // a server on loopback answers only requests addressed to loopback.
    if published().loopback_only && !addressed_to_loopback(request.host.as_deref()) {
        return plain(
            421,
            b"this server answers only requests addressed to its loopback address (Host: localhost or an IP address)\n",
        );
    }
    // The latest snapshot, taken out of the lock to be rendered.
    let newest = || {
        let published = published();
        (published.latest.clone(), published.hostname.clone())
    };
    match request.path.as_str() {
        "/metrics" => Answer {
            status: 200,
            content_type: "text/plain; version=0.0.4; charset=utf-8",
            body: match newest() {
                (Some(snapshot), hostname) => prometheus::exposition(&snapshot, &hostname),
                (None, _) => String::new(),
            }
            .into_bytes(),
            headers: &[],
        },
        "/" | "/index.html" => Answer {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: DASHBOARD.as_bytes().to_vec(),
            headers: &[
                ("Content-Security-Policy", DASHBOARD_POLICY),
                ("X-Content-Type-Options", "nosniff"),
                ("Cache-Control", "no-store"),
            ],
        },
        "/api/v1/snapshot" => json(match newest() {
            (Some(snapshot), _) => record::json_line(&snapshot),
            (None, _) => "{}\n".into(),
        }),
        "/api/v1/history" => {
            let Some(since) = since(request.query.as_deref()) else {
                return plain(
                    400,
                    b"`since` is a sequence number: /api/v1/history?since=N\n",
                );
            };
            let document = {
                let published = published();
                published.history.document(since, published.window)
            };
            // Serialising plain data with string keys cannot fail.
            match serde_json::to_string(&document) {
                Ok(text) => json(text),
                Err(error) => plain(500, error.to_string().as_bytes()),
            }
        }
        _ => plain(404, b"not found\n"),
    }
}

/// The `since` of a history request: 0 without one; none when it is not a number.
fn since(query: Option<&str>) -> Option<u64> {
    let Some(query) = query else {
        return Some(0);
    };
    let mut since = 0;
    for pair in query.split('&') {
        if let Some(value) = pair.strip_prefix("since=") {
            since = value.parse().ok()?;
        }
    }
    Some(since)
}

/// What envctl reads of a request.
struct RequestHead {
    /// The target's path, without the query.
    path: String,
    /// What follows the `?`, if anything.
    query: Option<String>,
    /// `HEAD`: the answer has no body.
    head_only: bool,
    /// The client may send another request on this connection.
    keep_alive: bool,
    /// The `Host` header, when the request has one.
    host: Option<String>,
}

/// Whether a `Host` header names this machine's loopback: `localhost` (RFC 6761) or an
/// IP address, with or without a port. No header (HTTP/1.0) is allowed: a browser always
/// sends one.
fn addressed_to_loopback(host: Option<&str>) -> bool {
    let Some(host) = host else {
        return true;
    };
    let name = match host.strip_prefix('[') {
        // `[::1]:9400`
        Some(rest) => {
            return rest
                .split_once(']')
                .is_some_and(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok());
        }
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

/// The next request's line and headers, or none when the client closed, stalled, sent
/// more than [`MAX_HEAD_BYTES`] or sent a body (scrapes have none).
fn read_head(reader: &mut BufReader<TcpStream>) -> Option<RequestHead> {
    let mut head = Vec::new();
    let mut limited = reader.take(MAX_HEAD_BYTES as u64);
    loop {
        let start = head.len();
        let read = limited.read_until(b'\n', &mut head).ok()?;
        if read == 0 || !head.ends_with(b"\n") {
            return None;
        }
        let line = &head[start..];
        if line == b"\r\n" || line == b"\n" {
            // Blank lines before a request line are allowed (RFC 9112 2.2).
            if start == 0 {
                head.clear();
                continue;
            }
            break;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.lines();
    let mut request_line = lines.next()?.split_ascii_whitespace();
    let method = request_line.next()?;
    let target = request_line.next()?;
    let version = request_line.next()?;
    let mut keep_alive = version == "HTTP/1.1";
    let mut host = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("host") {
            host = Some(value.to_string());
        } else if name.eq_ignore_ascii_case("connection") {
            if value.eq_ignore_ascii_case("close") {
                keep_alive = false;
            } else if value.eq_ignore_ascii_case("keep-alive") {
                keep_alive = true;
            }
        } else if (name.eq_ignore_ascii_case("content-length") && value != "0")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            return None;
        }
    }
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query.to_string())),
        None => (target, None),
    };
    Some(RequestHead {
        path: path.to_string(),
        query,
        head_only: method == "HEAD",
        keep_alive,
        host,
    })
}

/// An HTTP/1.1 response, whole.
fn response(
    status: u16,
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
    headers: &[(&str, &str)],
) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        421 => "Misdirected Request",
        500 => "Internal Server Error",
        _ => "Service Unavailable",
    };
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {connection}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::ContainerRow;

    fn published() -> Mutex<Published> {
        let mut history = History::new(Duration::from_secs(60), Duration::from_secs(1));
        for time in 1..=3 {
            history.push(&Snapshot {
                time: f64::from(time),
                containers: vec![ContainerRow {
                    id: "abc".into(),
                    name: "train".into(),
                    cpu_percent: Some(f64::from(time)),
                    ..ContainerRow::default()
                }],
                ..Snapshot::default()
            });
        }
        Mutex::new(Published {
            latest: Some(Arc::new(Snapshot {
                time: 3.0,
                ..Snapshot::default()
            })),
            hostname: "node-1".into(),
            history,
            window: Duration::from_secs(60),
            loopback_only: true,
        })
    }

    fn get(target: &str) -> Answer {
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query.to_string())),
            None => (target, None),
        };
        let request = RequestHead {
            path: path.into(),
            query,
            head_only: false,
            keep_alive: false,
            host: Some("127.0.0.1:9400".into()),
        };
        answer(&request, &published())
    }

    #[test]
    fn a_loopback_server_answers_only_requests_addressed_to_loopback() {
        for allowed in [
            None,
            Some("127.0.0.1:9400"),
            Some("localhost:9400"),
            Some("LOCALHOST"),
            Some("[::1]:9400"),
            Some("10.0.0.5"),
        ] {
            assert!(addressed_to_loopback(allowed), "{allowed:?}");
        }
        for refused in [
            Some("evil.example:9400"),
            Some("evil.example"),
            Some("[evil]:1"),
            Some("localhost.evil.example"),
        ] {
            assert!(!addressed_to_loopback(refused), "{refused:?}");
        }
        let request = RequestHead {
            path: "/api/v1/snapshot".into(),
            query: None,
            head_only: false,
            keep_alive: false,
            host: Some("rebound.example:9400".into()),
        };
        assert_eq!(answer(&request, &published()).status, 421);
    }

    #[test]
    fn the_history_answers_after_its_cursor() {
        let all: serde_json::Value = serde_json::from_slice(&get("/api/v1/history").body).unwrap();
        assert_eq!(all["times"], serde_json::json!([1.0, 2.0, 3.0]));
        assert_eq!(all["last_sequence"], 3);
        let later = get("/api/v1/history?since=2");
        assert_eq!(later.content_type, JSON);
        let later: serde_json::Value = serde_json::from_slice(&later.body).unwrap();
        assert_eq!(
            later["containers"][0]["cpu_percent"],
            serde_json::json!([3.0])
        );
        assert_eq!(get("/api/v1/history?since=x").status, 400);
        assert_eq!(get("/api/v1/history?since=-1").status, 400);
    }

    #[test]
    fn each_path_gets_its_answer() {
        let metrics = String::from_utf8(get("/metrics").body).unwrap();
        assert!(
            metrics.contains("envctl_sample_timestamp_seconds 3\n"),
            "{metrics}"
        );
        let snapshot: serde_json::Value =
            serde_json::from_slice(&get("/api/v1/snapshot").body).unwrap();
        assert_eq!(snapshot["schema_version"], 1);
        assert_eq!(snapshot["time"], 3.0);
        let page = get("/");
        assert_eq!(page.status, 200);
        assert!(page.content_type.starts_with("text/html"));
        assert!(
            page.headers
                .iter()
                .any(|(name, value)| *name == "Content-Security-Policy"
                    && value.contains("connect-src 'self'"))
        );
        assert_eq!(get("/nothing").status, 404);
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        // The one `http` in it is SVG's namespace, a name and never fetched.
        let outside = DASHBOARD.replace("http://www.w3.org/2000/svg", "");
        for fetched in [
            "http:", "https:", "//", "src=", "href=", "@import", "url(", "<link",
        ] {
            let found = outside
                .lines()
                .filter(|line| line.contains(fetched))
                .filter(|line| fetched != "//" || !line.trim_start().starts_with("//"))
                .collect::<Vec<_>>();
            assert!(found.is_empty(), "`{fetched}` in the dashboard: {found:?}");
        }
        for endpoint in ["/api/v1/history?since=", "/api/v1/snapshot"] {
            assert!(DASHBOARD.contains(endpoint), "{endpoint}");
        }
    }

    #[test]
    fn a_response_carries_its_headers() {
        let bytes = response(200, TEXT, b"x", true, &[("X-One", "1")]);
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\r\nX-One: 1\r\n\r\nx"), "{text}");
        assert!(text.contains("Connection: keep-alive"));
    }
}
