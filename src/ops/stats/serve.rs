//! `envctl stats --serve`: a small HTTP/1.1 server that answers Prometheus scrapes with
//! the latest exposition (`/metrics`), a one-line index (`/`) and 404 for anything else,
//! and shuts down when the live loop ends.
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

/// The latest exposition on `/metrics`, answered from threads of their own.
pub struct MetricsServer {
    latest: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    address: String,
}

impl MetricsServer {
    /// Listens on `address` (port 0 picks a free one) and starts answering; until the
    /// first [`publish`](MetricsServer::publish), `/metrics` is empty.
    pub fn start(address: &str) -> Result<MetricsServer, Error> {
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
        let latest = Arc::new(Mutex::new(String::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let latest = Arc::clone(&latest);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("envctl-metrics".into())
                .spawn(move || accept(&listener, &latest, &stop))
                .map_err(Error::Output)?
        };
        Ok(MetricsServer {
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

    /// The exposition the next scrapes get.
    pub fn publish(&self, text: String) {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = text;
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
fn accept(listener: &TcpListener, latest: &Arc<Mutex<String>>, stop: &AtomicBool) {
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
fn serve_connection(stream: TcpStream, latest: &Mutex<String>) {
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
        let (status, content_type, body) = match request.path.as_str() {
            "/metrics" => (
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                latest
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
                    .into_bytes(),
            ),
            "/" => (
                200,
                "text/plain; charset=utf-8",
                b"envctl stats: Prometheus metrics at /metrics\n".to_vec(),
            ),
            _ => (404, "text/plain; charset=utf-8", b"not found\n".to_vec()),
        };
        let mut answer = response(status, content_type, &body, keep_alive);
        if request.head_only {
            answer.truncate(answer.len() - body.len());
        }
        if writer.write_all(&answer).is_err() || !keep_alive {
            return;
        }
    }
}

/// What envctl reads of a request.
struct RequestHead {
    /// The target's path, without the query.
    path: String,
    /// `HEAD`: the answer has no body.
    head_only: bool,
    /// The client may send another request on this connection.
    keep_alive: bool,
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
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("connection") {
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
    Some(RequestHead {
        path: target.split('?').next().unwrap_or_default().to_string(),
        head_only: method == "HEAD",
        keep_alive,
    })
}

/// An HTTP/1.1 response, whole.
fn response(status: u16, content_type: &str, body: &[u8], keep_alive: bool) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Service Unavailable",
    };
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let mut bytes = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(body);
    bytes
}
