//! A fake Docker daemon on a unix socket: canned HTTP answers, good and bad, for what the
//! real daemon cannot be made to do (answer headers and then one byte a second, never send
//! headers, answer 500, bad JSON or a 50 MB error).
//!
//! ```ignore
//! let daemon = FakeDaemon::start(|request| match request.route() {
//!     "/containers/json" => Some(Reply::trickle(200, "[]", Duration::from_secs(1))),
//!     _ => None,
//! });
//! envctl.env("DOCKER_HOST", daemon.host());
//! ```
//!
//! `/_ping` and `/version` are answered as a real daemon answers them unless the route
//! answers them itself; anything else the route leaves (`None`) is 404. Each connection is served on a thread of its own with keep-alive, as
//! hyper's connection pool expects; [`FakeDaemon::requests`] lists what arrived
//! (`GET /containers/x/json`), so a test can assert what envctl did or did not ask for.
//! Threads still serving when the test ends are left to the process (a trickle stops at
//! the first write that fails).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the fake daemon read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path as sent, with the query and any `/v1.NN` prefix.
    pub target: String,
}

impl Request {
    /// The path without the API version prefix and without the query: `/containers/json`.
    pub fn route(&self) -> &str {
        let path = self.target.split('?').next().unwrap_or_default();
        match path.strip_prefix("/v1.") {
            Some(rest) => rest.find('/').map_or(path, |slash| &rest[slash..]),
            None => path,
        }
    }
}

/// What the fake daemon sends back.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete answer at once.
    Full { status: u16, body: Vec<u8> },
    /// Headers (with the full `Content-Length`) at once, then the body one byte per `every`.
    Trickle {
        status: u16,
        body: Vec<u8>,
        every: Duration,
    },
    /// Nothing at all, not even headers, for `for`; then the connection closes.
    Silent { r#for: Duration },
}

impl Reply {
    pub fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply::Full {
            status,
            body: body.into().into_bytes(),
        }
    }

    pub fn not_found() -> Reply {
        Reply::json(404, r#"{"message":"No such container"}"#)
    }

    pub fn no_content() -> Reply {
        Reply::Full {
            status: 204,
            body: Vec::new(),
        }
    }

    pub fn trickle(status: u16, body: impl Into<String>, every: Duration) -> Reply {
        Reply::Trickle {
            status,
            body: body.into().into_bytes(),
            every,
        }
    }
}

/// The answers a real daemon gives to `/_ping` and `/version` (Engine 20.10).
pub fn standard(request: &Request) -> Option<Reply> {
    match request.route() {
        "/_ping" => Some(Reply::Full {
            status: 200,
            body: b"OK".to_vec(),
        }),
        "/version" => Some(Reply::json(
            200,
            r#"{"Version":"20.10.24","ApiVersion":"1.41","MinAPIVersion":"1.12","Os":"linux","Arch":"amd64","KernelVersion":"6.1.0"}"#,
        )),
        _ => None,
    }
}

/// A container as `GET /containers/json` lists it.
pub fn listed_container(id: &str, name: &str, profile: &str) -> String {
    format!(
        r#"{{"Id":"{id}","Names":["/{name}"],"Image":"busybox","ImageID":"sha256:0","State":"running","Status":"Up 1 second","Created":1,"Labels":{{"envctl.profile":"{profile}"}},"Ports":[]}}"#
    )
}

/// A container as `GET /containers/{id}/json` answers for it.
pub fn inspected_container(id: &str, name: &str, profile: Option<&str>, running: bool) -> String {
    let labels = profile.map_or_else(
        || "{}".to_string(),
        |profile| format!(r#"{{"envctl.profile":"{profile}"}}"#),
    );
    format!(
        r#"{{"Id":"{id}","Name":"/{name}","State":{{"Status":"{}","Running":{running},"ExitCode":0,"StartedAt":"2024-01-01T00:00:00Z"}},"Config":{{"Image":"busybox","Labels":{labels}}},"HostConfig":{{}},"Mounts":[]}}"#,
        if running { "running" } else { "exited" }
    )
}

type Route = dyn Fn(&Request) -> Option<Reply> + Send + Sync;

/// The fake daemon; dropping it removes its socket.
pub struct FakeDaemon {
    _folder: tempfile::TempDir,
    path: PathBuf,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl FakeDaemon {
    /// Listens on a new socket in a temporary folder. `route` answers first; where it
    /// answers `None`, [`standard`] does (`/_ping`, `/version`), else 404.
    pub fn start(route: impl Fn(&Request) -> Option<Reply> + Send + Sync + 'static) -> FakeDaemon {
        let folder = tempfile::tempdir()
            .unwrap_or_else(|error| panic!("cannot make a folder for the fake daemon: {error}"));
        let path = folder.path().join("docker.sock");
        let listener = UnixListener::bind(&path)
            .unwrap_or_else(|error| panic!("cannot listen on {}: {error}", path.display()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let route: Arc<Route> = Arc::new(route);
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let Ok(connection) = connection else { return };
                let route = Arc::clone(&route);
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || serve(connection, &*route, &seen));
            }
        });
        FakeDaemon {
            _folder: folder,
            path,
            requests,
        }
    }

    /// `unix://…`, for `DOCKER_HOST`.
    pub fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    /// Every request so far, as `METHOD /path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|request| format!("{} {}", request.method, request.target))
            .collect()
    }
}

/// Serves one connection: requests one after the other (keep-alive) until it closes.
fn serve(connection: UnixStream, route: &Route, seen: &Mutex<Vec<Request>>) {
    let Ok(mut writer) = connection.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(connection);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let request = Request {
            method: parts.next().unwrap_or_default().to_string(),
            target: parts.next().unwrap_or_default().to_string(),
        };
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        seen.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.clone());
        let reply = route(&request)
            .or_else(|| standard(&request))
            .unwrap_or_else(Reply::not_found);
        if send(&mut writer, reply).is_err() {
            return;
        }
    }
}

fn send(writer: &mut UnixStream, reply: Reply) -> std::io::Result<()> {
    let head = |status: u16, length: usize| {
        format!(
            "HTTP/1.1 {status} Fake\r\nContent-Type: application/json\r\nApi-Version: 1.41\r\nContent-Length: {length}\r\n\r\n"
        )
    };
    match reply {
        Reply::Full { status, body } => {
            writer.write_all(head(status, body.len()).as_bytes())?;
            writer.write_all(&body)?;
            writer.flush()
        }
        Reply::Trickle {
            status,
            body,
            every,
        } => {
            writer.write_all(head(status, body.len()).as_bytes())?;
            writer.flush()?;
            for byte in body {
                std::thread::sleep(every);
                writer.write_all(&[byte])?;
                writer.flush()?;
            }
            Ok(())
        }
        Reply::Silent { r#for } => {
            std::thread::sleep(r#for);
            Err(std::io::Error::other("closed after silence"))
        }
    }
}
