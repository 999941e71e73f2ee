//! `envctl stats --serve`: a small HTTP server on a thread of its own that answers
//! Prometheus scrapes with the latest exposition (`/metrics`), a one-line index (`/`)
//! and 404 for anything else, and shuts down when the live loop ends.

use std::sync::{Arc, Mutex, PoisonError};

use crate::error::Error;

/// Where `--serve` listens when given no address (dcgm-exporter's port).
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:9400";

/// The latest exposition on `/metrics`, answered from a thread of its own.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    latest: Arc<Mutex<String>>,
    thread: Option<std::thread::JoinHandle<()>>,
    address: String,
}

impl MetricsServer {
    /// Listens on `address` (port 0 picks a free one) and starts answering; until the
    /// first [`publish`](MetricsServer::publish), `/metrics` is empty.
    pub fn start(address: &str) -> Result<MetricsServer, Error> {
        let server = tiny_http::Server::http(address).map_err(|source| Error::Serve {
            address: address.to_string(),
            source,
        })?;
        let bound = server
            .server_addr()
            .to_ip()
            .map_or_else(|| address.to_string(), |socket| socket.to_string());
        let server = Arc::new(server);
        let latest = Arc::new(Mutex::new(String::new()));
        let thread = {
            let server = Arc::clone(&server);
            let latest = Arc::clone(&latest);
            std::thread::Builder::new()
                .name("envctl-metrics".into())
                .spawn(move || answer(&server, &latest))
                .map_err(Error::Output)?
        };
        Ok(MetricsServer {
            server,
            latest,
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

    /// Stops listening and waits for the answering thread.
    pub fn stop(mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Answers every request until the server is unblocked.
fn answer(server: &tiny_http::Server, latest: &Mutex<String>) {
    // Constant ASCII headers always parse; the early return only keeps this total.
    let (Ok(exposition), Ok(text)) = (
        tiny_http::Header::from_bytes(
            &b"Content-Type"[..],
            &b"text/plain; version=0.0.4; charset=utf-8"[..],
        ),
        tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"text/plain; charset=utf-8"[..]),
    ) else {
        return;
    };
    for request in server.incoming_requests() {
        let path = request
            .url()
            .split('?')
            .next()
            .unwrap_or_default()
            .to_string();
        let response = match path.as_str() {
            "/metrics" => {
                let body = latest
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                tiny_http::Response::from_string(body).with_header(exposition.clone())
            }
            "/" => {
                tiny_http::Response::from_string("envctl stats: Prometheus metrics at /metrics\n")
                    .with_header(text.clone())
            }
            _ => tiny_http::Response::from_string("not found\n").with_status_code(404),
        };
        // A scraper that hung up is its own problem; the next scrape gets an answer.
        let _ = request.respond(response);
    }
}
