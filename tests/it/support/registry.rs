//! A real image registry on loopback for tests of pulls, digests and progress.
//!
//! [`Registry::start`] runs Debian's `docker-registry` (distribution 2.x; `apt-get install
//! docker-registry`, or set `ENVCTL_TEST_REGISTRY_BIN`) as `docker-registry serve
//! CONFIG.yml` on a free port of `127.0.0.1`, without auth or TLS, with its storage in a
//! temporary directory. Dropping the [`Registry`] kills the process and deletes the storage.
//!
//! The Docker daemon allows plain HTTP for registries on `127.0.0.0/8`, so
//! `docker push 127.0.0.1:PORT/repo:tag` works without any daemon configuration — as long
//! as the daemon shares the test's network namespace (a local `dockerd`).
//!
//! ```ignore
//! if !support::docker::require_daemon() || !support::registry::require_registry() {
//!     return;
//! }
//! let registry = Registry::start();
//! let reference = push_test_image(&registry, "team/app", "v1"); // not present locally
//! let _tag = ImageGuard::new(reference.as_str()); // removes the tag a pull creates
//! ```

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::docker::{self, ImageGuard};

/// Overrides the registry binary.
pub const REGISTRY_BIN_ENV: &str = "ENVCTL_TEST_REGISTRY_BIN";
/// How long the registry may take to answer `GET /v2/` after start.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// The registry binary: `$ENVCTL_TEST_REGISTRY_BIN`, `/usr/bin/docker-registry`, or
/// `docker-registry` / `registry` on `PATH`.
pub fn registry_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(REGISTRY_BIN_ENV) {
        return Some(PathBuf::from(p));
    }
    let fixed = PathBuf::from("/usr/bin/docker-registry");
    if fixed.is_file() {
        return Some(fixed);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| [dir.join("docker-registry"), dir.join("registry")])
        .find(|p| p.is_file())
}

/// Is the registry binary installed? Like [`docker::require_daemon`]: `false` (with a
/// `SKIPPED` line) when it is not, or a panic when `ENVCTL_REQUIRE_DOCKER=1`.
pub fn require_registry() -> bool {
    if registry_binary().is_some() {
        return true;
    }
    docker::skip_or_panic(
        "no docker-registry binary",
        &docker::current_test_name(),
        &format!(
            "Debian's `docker-registry` was not found (/usr/bin/docker-registry, PATH, \
             ${REGISTRY_BIN_ENV}).\nFix: `sudo apt-get install docker-registry`."
        ),
    )
}

/// A running `docker-registry` on `127.0.0.1:<free port>`; killed and wiped on drop.
#[derive(Debug)]
pub struct Registry {
    child: Child,
    addr: SocketAddr,
    host_port: String,
    storage: PathBuf,
    log: PathBuf,
    // Last, so the directory is removed after the process is gone.
    dir: tempfile::TempDir,
}

/// A parsed HTTP response from [`http_get`].
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names lowercased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("response body is not JSON ({e}): {}", self.text()))
    }
}

impl Registry {
    /// Starts a registry and waits until `GET /v2/` answers (at most [`READY_TIMEOUT`]).
    /// Retries on another port when the chosen one was taken in the meantime. Panics, with
    /// the registry's log, when it cannot start; call [`require_registry`] first.
    pub fn start() -> Registry {
        let bin = registry_binary().unwrap_or_else(|| {
            panic!(
                "no docker-registry binary (/usr/bin/docker-registry, PATH, ${REGISTRY_BIN_ENV}). \
                 Fix: `sudo apt-get install docker-registry`."
            )
        });
        let dir = tempfile::Builder::new()
            .prefix("envctl-test-registry-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}"));
        let storage = dir.path().join("storage");
        fs::create_dir_all(&storage)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", storage.display()));
        let config = dir.path().join("config.yml");

        let mut failures = Vec::new();
        for attempt in 1..=5 {
            let port = free_loopback_port();
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let log = dir.path().join(format!("registry-{attempt}.log"));
            fs::write(&config, config_yaml(&storage, addr))
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", config.display()));
            let mut child = spawn(&bin, &config, &log);
            match wait_ready(&mut child, addr) {
                Ok(()) => {
                    return Registry {
                        child,
                        addr,
                        host_port: addr.to_string(),
                        storage,
                        log,
                        dir,
                    };
                }
                Err(why) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let text = fs::read_to_string(&log).unwrap_or_default();
                    let port_taken = text.contains("address already in use");
                    failures.push(format!(
                        "attempt {attempt} on {addr}: {why}\n--- registry log ---\n{}",
                        tail(&text, 40)
                    ));
                    if !port_taken {
                        break;
                    }
                }
            }
        }
        panic!(
            "`{} serve {}` did not come up:\n{}",
            bin.display(),
            config.display(),
            failures.join("\n")
        );
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `127.0.0.1:PORT`, the registry part of an image reference.
    pub fn host_port(&self) -> &str {
        &self.host_port
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.host_port)
    }

    /// `127.0.0.1:PORT/<repo>:<tag>`.
    pub fn reference(&self, repo: &str, tag: &str) -> String {
        format!("{}/{repo}:{tag}", self.host_port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Where the registry keeps blobs and manifests (removed on drop).
    pub fn storage_dir(&self) -> &Path {
        &self.storage
    }

    /// The temporary directory holding config, log and storage (removed on drop).
    pub fn root_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The registry's own log so far (stdout and stderr).
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET <path>` on the registry; panics on an I/O error (with the registry log).
    pub fn get(&self, path: &str) -> HttpResponse {
        http_get(self.addr, path, Duration::from_secs(10)).unwrap_or_else(|e| {
            panic!(
                "GET {}{path} failed: {e}\n--- registry log ---\n{}",
                self.url(),
                tail(&self.log(), 40)
            )
        })
    }

    /// Repositories listed by `GET /v2/_catalog`.
    pub fn catalog(&self) -> Vec<String> {
        string_list(&self.get_ok("/v2/_catalog").json(), "repositories")
    }

    /// Tags of `repo` listed by `GET /v2/<repo>/tags/list`.
    pub fn tags(&self, repo: &str) -> Vec<String> {
        string_list(
            &self.get_ok(&format!("/v2/{repo}/tags/list")).json(),
            "tags",
        )
    }

    fn get_ok(&self, path: &str) -> HttpResponse {
        let resp = self.get(path);
        if resp.status != 200 {
            panic!(
                "GET {}{path}: HTTP {} {}",
                self.url(),
                resp.status,
                resp.text()
            );
        }
        resp
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // `dir` (config, log, storage) is removed when the field drops, right after this.
    }
}

/// Tags [`docker::test_image`] as `<registry>/<repo>:<tag>`, pushes it, removes the local
/// tag again (so a later pull really pulls) and returns the reference. Panics with
/// docker's stderr and the registry log when the push fails.
pub fn push_test_image(registry: &Registry, repo: &str, tag: &str) -> String {
    let image = docker::test_image();
    let reference = registry.reference(repo, tag);
    docker::docker_stdout(["tag", image.as_str(), reference.as_str()]);
    let local_tag = ImageGuard::new(reference.as_str());
    let out = docker::docker_output(["push", reference.as_str()]);
    if !out.status.success() {
        panic!(
            "`docker push {reference}` failed ({}):\n{}\n--- registry log ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            tail(&registry.log(), 40)
        );
    }
    drop(local_tag);
    reference
}

/// A loopback port that was free a moment ago (bind to port 0, read it, release it).
pub fn free_loopback_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("cannot bind a loopback port: {e}"))
}

fn config_yaml(storage: &Path, addr: SocketAddr) -> String {
    let storage = storage.display().to_string().replace('"', "\\\"");
    format!(
        r#"version: 0.1
log:
  level: info
  fields:
    service: envctl-test-registry
storage:
  filesystem:
    rootdirectory: "{storage}"
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: "{addr}"
  secret: envctl-test-registry
  headers:
    X-Content-Type-Options: [nosniff]
"#
    )
}

fn spawn(bin: &Path, config: &Path, log: &Path) -> Child {
    let open = || {
        fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", log.display()))
    };
    let mut cmd = Command::new(bin);
    cmd.arg("serve")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(open())
        .stderr(open());
    // REGISTRY_* variables override the config file; keep the caller's out of it.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("REGISTRY_") {
            cmd.env_remove(key);
        }
    }
    cmd.spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()))
}

fn wait_ready(child: &mut Child, addr: SocketAddr) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let mut last: String;
    loop {
        // A process that exited is not ours to wait for, even if something answers.
        match child.try_wait() {
            Ok(Some(status)) => return Err(format!("the registry exited ({status})")),
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for the registry: {e}")),
        }
        match http_get(addr, "/v2/", Duration::from_secs(1)) {
            Ok(r)
                if r.status == 200
                    && r.header("docker-distribution-api-version") == Some("registry/2.0") =>
            {
                return Ok(());
            }
            Ok(r) => last = format!("GET /v2/ answered HTTP {}: {}", r.status, r.text()),
            Err(e) => last = format!("GET /v2/: {e}"),
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "not ready within {} s ({last})",
                READY_TIMEOUT.as_secs()
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// A minimal HTTP/1.1 `GET` (`Connection: close`), decoding `Content-Length` and chunked
/// bodies. `timeout` bounds the connect and each read/write.
pub fn http_get(addr: SocketAddr, path: &str, timeout: Duration) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: envctl-tests\r\n\
         Accept: application/json\r\nConnection: close\r\n\r\n"
    )?;
    stream.flush()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// A minimal HTTP/1.1 request with `headers` and `body` (`Connection: close`): what a
/// test needs beyond [`http_get`], as a manifest read with its own `Accept` or a manifest
/// `PUT` (an image index no docker CLI here can push).
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    let timeout = Duration::from_secs(10);
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: envctl-tests\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The Docker image manifest (schema 2) media type.
pub const IMAGE_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// The Docker manifest list (a multi-platform index) media type.
pub const MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

impl Registry {
    /// Puts a manifest list under `repo:tag` whose entries are the image manifest of
    /// `repo:image_tag` (pushed before) for each of `platforms` (`("linux", "amd64")`):
    /// a multi-platform image as `docker buildx` pushes one. Returns the list's digest as
    /// the registry computed it.
    pub fn put_index(
        &self,
        repo: &str,
        image_tag: &str,
        tag: &str,
        platforms: &[(&str, &str)],
    ) -> String {
        let manifest = http_request(
            self.addr,
            "GET",
            &format!("/v2/{repo}/manifests/{image_tag}"),
            &[("Accept", IMAGE_MANIFEST)],
            b"",
        )
        .unwrap_or_else(|e| panic!("reading {repo}:{image_tag}'s manifest: {e}"));
        assert_eq!(manifest.status, 200, "{}", manifest.text());
        let digest = manifest
            .header("docker-content-digest")
            .unwrap_or_else(|| panic!("no Docker-Content-Digest for {repo}:{image_tag}"))
            .to_string();
        let entries: Vec<serde_json::Value> = platforms
            .iter()
            .map(|(os, architecture)| {
                serde_json::json!({
                    "mediaType": IMAGE_MANIFEST,
                    "size": manifest.body.len(),
                    "digest": digest,
                    "platform": {"os": os, "architecture": architecture},
                })
            })
            .collect();
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_LIST,
            "manifests": entries,
        })
        .to_string()
        .into_bytes();
        let put = http_request(
            self.addr,
            "PUT",
            &format!("/v2/{repo}/manifests/{tag}"),
            &[("Content-Type", MANIFEST_LIST)],
            &index,
        )
        .unwrap_or_else(|e| panic!("putting the index {repo}:{tag}: {e}"));
        assert_eq!(put.status, 201, "{}\n{}", put.text(), tail(&self.log(), 20));
        put.header("docker-content-digest")
            .unwrap_or_else(|| panic!("no Docker-Content-Digest for the index {repo}:{tag}"))
            .to_string()
    }
}

fn parse_response(raw: &[u8]) -> Result<HttpResponse, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no end of headers in {} bytes", raw.len()))?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let body = if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        decode_chunked(rest)?
    } else if let Some(len) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
        rest.get(..len)
            .ok_or_else(|| format!("body shorter than Content-Length {len}"))?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

fn decode_chunked(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunk size")?;
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size_hex = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|e| format!("bad chunk size {size_hex:?}: {e}"))?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(data.get(..size).ok_or("truncated chunk")?);
        data = data.get(size + 2..).ok_or("truncated chunk end")?;
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn string_list(json: &serde_json::Value, key: &str) -> Vec<String> {
    json.get(key)
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A "registry" that accepts connections and never answers: a pull from it hangs.
pub struct Blackhole {
    pub address: SocketAddr,
    pub accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Blackhole {
    pub fn start() -> Blackhole {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .unwrap_or_else(|e| panic!("cannot bind a loopback port: {e}"));
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("non-blocking listener: {e}"));
        let address = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("listener address: {e}"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (accepted, stop) = (Arc::clone(&accepted), Arc::clone(&stop));
            thread::spawn(move || {
                let mut held: Vec<TcpStream> = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            held.push(stream);
                            accepted.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(_) => thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
        };
        Blackhole {
            address,
            accepted,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Blackhole {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
