//! `envctl stats --serve`: a small HTTP/1.1 server that answers Prometheus scrapes with
//! the latest exposition (`/metrics`), the live dashboard (`/`, one page embedded in the
//! binary), the latest snapshot (`/api/v1/snapshot`) and the recent history
//! (`/api/v1/history?since=N`) as JSON, 404 for anything else, and shuts down when the
//! live loop ends. The snapshot's diagnoses and failures carry `since`: when this server
//! first saw each one in an unbroken run of snapshots ([`FirstSeen`]), so a page opened
//! late, or reloaded, says how long a problem has lasted rather than when it looked.
//!
//! Each connection is served on a thread of its own, so a client that sends and never
//! reads blocks nobody but itself, and its work and time are bounded: at most
//! [`MAX_REQUESTS_PER_CONNECTION`] requests, [`REQUEST_DEADLINE`] for each request from its
//! first byte to the last byte of its answer (a client trickling a byte every few seconds
//! gets no more), a request head of at most [`MAX_HEAD_BYTES`], and at most
//! [`MAX_CONNECTIONS`] at once. When all are taken, a new client closes the connection
//! that has waited longest for a request head rather than being turned away: forty
//! slow-header connections cannot keep a scrape out. Stopping waits only for the
//! accepting thread, which looks at the stop flag every [`ACCEPT_POLL`]: a connection
//! thread still blocked on its client ends at its own deadline, and never holds the
//! process up.
//!
//! Every request must be addressed to this server by `Host`, whatever address it listens
//! on: an IP address, `localhost`, or a name given with `--serve-host`. A web page whose
//! name is made to resolve to this machine (DNS rebinding) sends its own name, and is
//! answered 421; two `Host` headers are refused as a malformed request.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::error::Error;
use crate::monitor::history::History;
use crate::monitor::team::HostsSnapshot;
use crate::monitor::{Snapshot, prometheus, record};

/// The dashboard: one page, its styles and script inline, nothing fetched but this
/// server's `/api/v1/…`.
const DASHBOARD: &str = crate::monitor::DASHBOARD_PAGE;

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

/// How long one request may take, from the first byte of its head to the last byte of its
/// answer, however the client spaces its bytes.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

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
    /// Since when each diagnosis and failure of `latest` has been seen.
    since: Arc<Since>,
    first_seen: FirstSeen,
    /// DCGM's `Hostname` label.
    hostname: Option<String>,
    /// The `host` label of every series: the `Hostname`, or the daemon's endpoint when
    /// the host's name could not be read.
    host: String,
    /// With `--hosts`: every host's latest, which `/metrics` and `/api/v1/snapshot` answer
    /// instead of `latest`.
    team: Option<Arc<HostsSnapshot>>,
    history: History,
    window: Duration,
    /// The names besides IP addresses and `localhost` that requests may be addressed to
    /// (`--serve-host`), lower case.
    host_names: Vec<String>,
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
    /// `host_names`: the names besides IP addresses and `localhost` that requests may
    /// address it by (`--serve-host`).
    pub fn start(
        address: &str,
        window: Duration,
        interval: Duration,
        host_names: &[String],
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
        let latest = Arc::new(Mutex::new(Published {
            latest: None,
            since: Arc::default(),
            first_seen: FirstSeen::default(),
            hostname: None,
            host: String::new(),
            team: None,
            history: History::new(window, interval),
            // What the history really covers: the dashboard says this span.
            window: crate::monitor::history::span_kept(window, interval),
            host_names: host_names
                .iter()
                .map(|name| name.to_ascii_lowercase())
                .collect(),
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
    /// and `host` as `hostname`, else `endpoint`; its JSON), and its moment added to the
    /// history.
    pub fn publish(&self, snapshot: &Snapshot, hostname: Option<&str>, endpoint: &str) {
        let shared = Arc::new(snapshot.clone());
        let mut published = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        published.since = Arc::new(published.first_seen.observe(snapshot));
        published.latest = Some(shared);
        if published.hostname.as_deref() != hostname {
            published.hostname = hostname.map(str::to_string);
        }
        let host = hostname.unwrap_or(endpoint);
        if published.host != host {
            published.host = host.to_string();
        }
        published.history.push(snapshot);
    }

    /// What the next requests get with `--hosts`: every host's rows, or why it has none.
    /// The curves of the history are one daemon's; a team's page shows the rows.
    pub fn publish_team(&self, team: &HostsSnapshot) {
        let shared = Arc::new(team.clone());
        self.latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .team = Some(shared);
    }

    /// Stops listening and waits for the accepting thread (at most [`ACCEPT_POLL`]).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The connections waiting for a request head, each with when it began waiting: the ones
/// a new client may close when every slot is taken.
type Waiting = Arc<Mutex<Vec<(u64, std::time::Instant, TcpStream)>>>;

/// Accepts connections until `stop`, each served on a thread of its own.
fn accept(listener: &TcpListener, latest: &Latest, stop: &AtomicBool) {
    let open = Arc::new(AtomicUsize::new(0));
    let waiting: Waiting = Arc::new(Mutex::new(Vec::new()));
    let mut next_id = 0u64;
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
        if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS && !evict_longest_waiting(&waiting) {
            // Every slot is answering a request: busy for a moment, not held.
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
        open.fetch_add(1, Ordering::SeqCst);
        next_id += 1;
        let id = next_id;
        let latest = Arc::clone(latest);
        let connection_open = Arc::clone(&open);
        let connection_waiting = Arc::clone(&waiting);
        let spawned = std::thread::Builder::new()
            .name("envctl-metrics-connection".into())
            .spawn(move || {
                serve_connection(stream, &latest, id, &connection_waiting);
                forget(&connection_waiting, id);
                connection_open.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Closes the connection that has waited longest for a request head, so that a new client
/// gets its slot; whether there was one. Its thread sees the closed socket and ends.
fn evict_longest_waiting(waiting: &Waiting) -> bool {
    let mut waiting = waiting.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(oldest) = waiting
        .iter()
        .enumerate()
        .min_by_key(|(_, (_, since, _))| *since)
        .map(|(index, _)| index)
    else {
        return false;
    };
    let (_, _, stream) = waiting.swap_remove(oldest);
    // Already closed by its client is as good.
    let _ = stream.shutdown(std::net::Shutdown::Both);
    true
}

fn forget(waiting: &Waiting, id: u64) {
    waiting
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|(waiting_id, _, _)| *waiting_id != id);
}

/// Answers the requests of one connection, in order, up to the per-connection bounds. A
/// client that hung up, stalled past its deadline or sent something that is not HTTP is
/// closed: it is its own problem, and the next scrape gets an answer.
fn serve_connection(stream: TcpStream, latest: &Mutex<Published>, id: u64, waiting: &Waiting) {
    let Ok(reading) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reading);
    let mut writer = stream;
    for answered in 1..=MAX_REQUESTS_PER_CONNECTION {
        // Waiting for a head, this connection may be closed for a new client.
        if let Ok(handle) = writer.try_clone() {
            waiting
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((id, std::time::Instant::now(), handle));
        }
        let head = read_head(&mut reader);
        forget(waiting, id);
        let (request, deadline) = match head {
            Head::Request(request, deadline) => (request, deadline),
            Head::Malformed(deadline) => {
                let bytes = response(400, TEXT, b"malformed request\n", false, &[]);
                let _ = write_until(&mut writer, &bytes, deadline);
                return;
            }
            Head::Closed => return,
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
        if write_until(&mut writer, &bytes, deadline).is_err() || !keep_alive {
            return;
        }
    }
}

/// Writes `bytes` whole before `deadline`, however slowly the client reads.
fn write_until(
    writer: &mut TcpStream,
    mut bytes: &[u8],
    deadline: std::time::Instant,
) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let left = remaining(deadline)?;
        writer.set_write_timeout(Some(left.min(IO_TIMEOUT)))?;
        match writer.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(written) => bytes = &bytes[written..],
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// The time left before `deadline`; an error once it has passed.
fn remaining(deadline: std::time::Instant) -> std::io::Result<Duration> {
    deadline
        .checked_duration_since(std::time::Instant::now())
        .filter(|left| !left.is_zero())
        .ok_or_else(|| std::io::ErrorKind::TimedOut.into())
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
    // DNS rebinding: a web page whose name is made to resolve to this machine could read
    // the dashboard's data from the user's browser. Its requests carry that name as
    // `Host`; whatever the bind (loopback, `0.0.0.0`, `[::]`), only requests addressed by
    // an IP address, `localhost` or a `--serve-host` name are answered.
    if !addressed_here(request.host.as_deref(), &published().host_names) {
        return plain(
            421,
            b"this server answers only requests addressed to an IP address, localhost or a name given with --serve-host\n",
        );
    }
    // The latest snapshot, taken out of the lock to be rendered.
    let newest = || {
        let published = published();
        (
            published.latest.clone(),
            published.hostname.clone(),
            published.host.clone(),
        )
    };
    let team = || published().team.clone();
    let newest_since = || {
        let published = published();
        (published.latest.clone(), Arc::clone(&published.since))
    };
    match request.path.as_str() {
        "/metrics" => Answer {
            status: 200,
            content_type: "text/plain; version=0.0.4; charset=utf-8",
            body: match (team(), newest()) {
                (Some(team), _) => prometheus::team_exposition(&team),
                (None, (Some(snapshot), hostname, host)) => {
                    prometheus::exposition(&snapshot, hostname.as_deref(), &host)
                }
                (None, (None, ..)) => String::new(),
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
        "/api/v1/snapshot" if team().is_some() => json(match team() {
            Some(team) => team.json_line(),
            None => "{}\n".into(),
        }),
        "/api/v1/snapshot" => json(match newest_since() {
            (Some(snapshot), since) => with_since(&record::json_line(&snapshot), &since),
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

/// Since when each diagnosis and failure of one snapshot has been seen, in its order
/// (seconds since the Unix epoch, as the snapshot's `time`).
#[derive(Debug, Default, Clone, PartialEq)]
struct Since {
    diagnoses: Vec<f64>,
    failures: Vec<f64>,
}

/// When each problem now present was first seen: a diagnosis by its id and subject, a
/// failure by its subject and kind. One absent from a snapshot is forgotten, so when it
/// comes back it is a new run of it.
#[derive(Debug, Default)]
struct FirstSeen {
    diagnoses: std::collections::BTreeMap<(String, String), f64>,
    failures: std::collections::BTreeMap<(String, String), f64>,
}

impl FirstSeen {
    /// Records `snapshot` and returns since when each of its problems has been seen.
    fn observe(&mut self, snapshot: &Snapshot) -> Since {
        fn runs(
            seen: &mut std::collections::BTreeMap<(String, String), f64>,
            keys: Vec<(String, String)>,
            time: f64,
        ) -> Vec<f64> {
            seen.retain(|key, _| keys.contains(key));
            keys.into_iter()
                .map(|key| *seen.entry(key).or_insert(time))
                .collect()
        }
        let diagnoses = snapshot
            .diagnoses
            .iter()
            .map(|diagnosis| (diagnosis.id.clone(), diagnosis.subject.clone()))
            .collect();
        let failures = snapshot
            .failures
            .iter()
            .map(|failure| (failure.subject.to_string(), format!("{:?}", failure.kind)))
            .collect();
        Since {
            diagnoses: runs(&mut self.diagnoses, diagnoses, snapshot.time),
            failures: runs(&mut self.failures, failures, snapshot.time),
        }
    }
}

/// The snapshot's JSON line with `since` added to each diagnosis and failure.
fn with_since(line: &str, since: &Since) -> String {
    let Ok(mut document) = serde_json::from_str::<serde_json::Value>(line) else {
        // A line of our own that does not parse is a bug; it is answered as it is.
        return line.to_string();
    };
    for (list, times) in [
        ("diagnoses", &since.diagnoses),
        ("failures", &since.failures),
    ] {
        if let Some(items) = document
            .get_mut(list)
            .and_then(|items| items.as_array_mut())
        {
            for (item, time) in items.iter_mut().zip(times) {
                if let Some(item) = item.as_object_mut() {
                    item.insert("since".into(), serde_json::json!(time));
                }
            }
        }
    }
    let mut text = document.to_string();
    text.push('\n');
    text
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

/// Whether a `Host` header addresses this server: an IP address (`[::1]` for IPv6),
/// `localhost` (RFC 6761) or one of `names`, each with or without a port and nothing else.
/// No header (HTTP/1.0) is allowed: a browser always sends one.
fn addressed_here(host: Option<&str>, names: &[String]) -> bool {
    let Some(host) = host else {
        return true;
    };
    let is_port = |port: &str| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit());
    if let Some(rest) = host.strip_prefix('[') {
        // `[::1]:9400`: after the bracket, a port or nothing (`[::1]evil.example` is not).
        return rest.split_once(']').is_some_and(|(ip, after)| {
            ip.parse::<std::net::Ipv6Addr>().is_ok()
                && (after.is_empty() || after.strip_prefix(':').is_some_and(is_port))
        });
    }
    let name = match host.rsplit_once(':') {
        Some((name, port)) if is_port(port) => name,
        Some(_) => return false,
        None => host,
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::Ipv4Addr>().is_ok()
        || names
            .iter()
            .any(|allowed| name.eq_ignore_ascii_case(allowed))
}

/// How reading a request head ended.
enum Head {
    /// A request, and the deadline its answer must be written by.
    Request(RequestHead, std::time::Instant),
    /// Bytes that are not a request envctl answers (two `Host` headers): answered 400.
    Malformed(std::time::Instant),
    /// The client closed, stalled past the deadline, sent too much or sent a body.
    Closed,
}

/// The next request's line and headers, read by [`REQUEST_DEADLINE`] from its first byte
/// (the wait before it is bounded by [`IO_TIMEOUT`] alone, an idle keep-alive client's),
/// at most [`MAX_HEAD_BYTES`] of them.
fn read_head(reader: &mut BufReader<TcpStream>) -> Head {
    read_head_within(reader, REQUEST_DEADLINE)
}

/// [`read_head`] with `request_deadline` from the first byte (tests take a short one).
fn read_head_within(reader: &mut BufReader<TcpStream>, request_deadline: Duration) -> Head {
    let _ = reader.get_ref().set_read_timeout(Some(IO_TIMEOUT));
    let mut deadline = None;
    let mut head: Vec<u8> = Vec::new();
    loop {
        if let Some(deadline) = deadline {
            let Ok(left) = remaining(deadline) else {
                return Head::Closed;
            };
            if reader
                .get_ref()
                .set_read_timeout(Some(left.min(IO_TIMEOUT)))
                .is_err()
            {
                return Head::Closed;
            }
        }
        let available = match reader.fill_buf() {
            Ok([]) | Err(_) => return Head::Closed,
            Ok(available) => available,
        };
        // The request's time starts with its first byte.
        if deadline.is_none() {
            deadline = Some(std::time::Instant::now() + request_deadline);
        }
        let line_end = available.iter().position(|byte| *byte == b'\n');
        let taken = line_end.map_or(available.len(), |index| index + 1);
        head.extend_from_slice(&available[..taken]);
        reader.consume(taken);
        if head.len() > MAX_HEAD_BYTES {
            return Head::Closed;
        }
        if line_end.is_none() {
            continue;
        }
        // Blank lines before a request line are allowed (RFC 9112 2.2).
        if head == b"\r\n" || head == b"\n" {
            head.clear();
            continue;
        }
        if head.ends_with(b"\n\r\n") || head.ends_with(b"\n\n") {
            break;
        }
    }
    let deadline = deadline.unwrap_or_else(|| std::time::Instant::now() + request_deadline);
    match parse_head(&head) {
        Some(Ok(request)) => Head::Request(request, deadline),
        Some(Err(())) => Head::Malformed(deadline),
        None => Head::Closed,
    }
}

/// A request head, parsed: none for what is no request envctl answers and closes on (a
/// body), an error for one it answers 400 (two `Host` headers: which one the request
/// meant cannot be told, and a proxy may have read the other).
fn parse_head(head: &[u8]) -> Option<Result<RequestHead, ()>> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines().skip_while(|line| line.is_empty());
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
            if host.is_some() {
                return Some(Err(()));
            }
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
    Some(Ok(RequestHead {
        path: path.to_string(),
        query,
        head_only: method == "HEAD",
        keep_alive,
        host,
    }))
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
    use std::io::Read as _;

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
            since: Arc::default(),
            first_seen: FirstSeen::default(),
            hostname: Some("node-1".into()),
            host: "node-1".into(),
            team: None,
            history,
            window: Duration::from_secs(60),
            host_names: vec!["gpu-node.example".into()],
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
    fn every_server_answers_only_requests_addressed_to_it() {
        let names = ["gpu-node.example".to_string()];
        for allowed in [
            None,
            Some("127.0.0.1:9400"),
            Some("localhost:9400"),
            Some("LOCALHOST"),
            Some("[::1]:9400"),
            Some("[::1]"),
            Some("10.0.0.5"),
            Some("GPU-node.example:9400"),
        ] {
            assert!(addressed_here(allowed, &names), "{allowed:?}");
        }
        for refused in [
            Some("evil.example:9400"),
            Some("evil.example"),
            Some("[evil]:1"),
            Some("[::1]evil.example"),
            Some("[::1]:9400evil"),
            Some("localhost.evil.example"),
            Some("127.0.0.1.evil.example"),
            Some("localhost:"),
            Some("localhost:x"),
            Some(""),
        ] {
            assert!(!addressed_here(refused, &names), "{refused:?}");
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
    fn two_host_headers_are_malformed() {
        assert!(matches!(
            parse_head(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n"),
            Some(Err(()))
        ));
        assert!(matches!(
            parse_head(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
            Some(Ok(_))
        ));
    }

    /// Slow clients: a head trickled a byte at a time is cut at the request's deadline,
    /// and forty of them leave room for a scrape.
    #[test]
    fn slow_headers_neither_last_nor_keep_a_scrape_out() {
        let server = StatsServer::start(
            "127.0.0.1:0",
            Duration::from_secs(60),
            Duration::from_secs(1),
            &[],
        )
        .unwrap();
        let address = server.address().to_string();
        let mut slow = Vec::new();
        for _ in 0..40 {
            let mut stream = TcpStream::connect(&address).unwrap();
            stream
                .write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
                .unwrap();
            slow.push(stream);
        }
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..3 {
            let mut scrape = TcpStream::connect(&address).unwrap();
            scrape
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            scrape
                .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut answer = String::new();
            let _ = scrape.read_to_string(&mut answer);
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
        }
        drop(slow);
        server.stop();
    }

    #[test]
    fn a_trickled_head_is_cut_at_the_request_deadline() {
        // A byte every 100 ms never lets a read time out: only the deadline from the first
        // byte ends it (the server's is REQUEST_DEADLINE; one second here).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let trickle = std::thread::spawn(move || {
            let mut stream = TcpStream::connect(address).unwrap();
            let started = std::time::Instant::now();
            while started.elapsed() < Duration::from_secs(5) {
                if stream.write_all(b"X").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let (accepted, _) = listener.accept().unwrap();
        let started = std::time::Instant::now();
        let head = read_head_within(&mut BufReader::new(accepted), Duration::from_secs(1));
        assert!(matches!(head, Head::Closed));
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(3),
            "{took:?}"
        );
        drop(trickle);
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
            metrics.contains(
                "envctl_sample_timestamp_seconds{Hostname=\"node-1\",host=\"node-1\"} 3\n"
            ),
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

    /// Issue 31: "(since …)" is when the problem began as this server saw it, kept across
    /// snapshots, forgotten when it goes away, and carried by the snapshot's JSON.
    #[test]
    fn a_problem_is_dated_from_its_first_snapshot() {
        use crate::monitor::{Diagnosis, Failure, FailureKind, FailureSubject, Severity};
        let diagnosis = |id: &str, subject: &str| Diagnosis {
            id: id.into(),
            severity: Severity::Warning,
            subject: subject.into(),
            message: "seen".into(),
            evidence: Default::default(),
            hint: "change it".into(),
        };
        let snapshot = |time: f64, diagnoses: Vec<Diagnosis>, failures: Vec<Failure>| Snapshot {
            time,
            diagnoses,
            failures,
            ..Snapshot::default()
        };
        let lost = Failure {
            subject: FailureSubject::Daemon,
            kind: FailureKind::ConnectionRefused,
            message: "gone".into(),
        };
        let mut seen = FirstSeen::default();
        let full = || diagnosis("gpu-memory-near-full", "gpu 1");
        let first = seen.observe(&snapshot(10.0, vec![full()], vec![]));
        assert_eq!(first.diagnoses, [10.0]);
        let later = seen.observe(&snapshot(
            11.0,
            vec![diagnosis("input-bound", "train"), full()],
            vec![lost.clone()],
        ));
        assert_eq!(later.diagnoses, [11.0, 10.0], "in the snapshot's order");
        assert_eq!(later.failures, [11.0]);
        // The same id on another subject is another problem.
        let other = seen.observe(&snapshot(
            12.0,
            vec![full(), diagnosis("gpu-memory-near-full", "gpu 0")],
            vec![lost.clone()],
        ));
        assert_eq!(other.diagnoses, [10.0, 12.0]);
        assert_eq!(other.failures, [11.0]);
        // Gone for a snapshot, then back: a new run.
        seen.observe(&snapshot(13.0, vec![], vec![]));
        let back = seen.observe(&snapshot(14.0, vec![full()], vec![lost.clone()]));
        assert_eq!((back.diagnoses, back.failures), (vec![14.0], vec![14.0]));

        let shown = snapshot(15.0, vec![full()], vec![lost]);
        let since = seen.observe(&shown);
        let line: serde_json::Value =
            serde_json::from_str(&with_since(&record::json_line(&shown), &since)).unwrap();
        assert_eq!(line["diagnoses"][0]["since"], 14.0);
        assert_eq!(line["failures"][0]["since"], 14.0);
        assert_eq!(
            line["diagnoses"][0]["id"], "gpu-memory-near-full",
            "nothing else changes"
        );
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
