//! How the registry client reaches registries: through the proxy `HTTPS_PROXY`,
//! `HTTP_PROXY` or `ALL_PROXY` names (a `CONNECT` tunnel, as before), directly for the
//! hosts `NO_PROXY` names, with TLS inside the tunnel for an `https` registry, and within
//! its timeout. A tiny `CONNECT` proxy on a loopback `TcpListener` thread stands in for a
//! team's proxy, in front of the fake registry of `registry_paging`; no Docker daemon is
//! needed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use envctl::profile::image::ImageReference;
use envctl_ops::registry::RegistryClient;
use envctl_ops::registry::proxy::{Proxy, ProxyVariables};

use crate::registry_paging::{FakeRegistry, two_pages};
use crate::support::cli::{Envctl, Run};

/// What the fake proxy does with a `CONNECT`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Opens the tunnel to the target and copies bytes both ways.
    Tunnel,
    /// Answers `403 Forbidden`.
    Refuse,
    /// Answers `200`, keeps the first byte the client sends through the tunnel (a TLS
    /// handshake starts with 22) and closes.
    FirstByte,
    /// Keeps the first byte the client sends at all, before any `CONNECT`, and closes:
    /// what an `https://` proxy sees.
    Hello,
}

/// One `CONNECT` the proxy received.
#[derive(Debug, Clone)]
struct Connect {
    /// `CONNECT host:port HTTP/1.1`.
    line: String,
    authorization: Option<String>,
    /// What the client sent first through the tunnel ([`Mode::FirstByte`]).
    first_byte: Option<u8>,
}

struct FakeProxy {
    addr: SocketAddr,
    connects: Arc<Mutex<Vec<Connect>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeProxy {
    fn start(mode: Mode) -> FakeProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connects = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (connects, stop) = (Arc::clone(&connects), Arc::clone(&stop));
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let connects = Arc::clone(&connects);
                    // A tunnel lives as long as the client keeps its connection: each
                    // one on a thread of its own.
                    thread::spawn(move || proxy_one(stream, mode, &connects));
                }
            })
        };
        FakeProxy {
            addr,
            connects,
            stop,
            thread: Some(thread),
        }
    }

    fn connects(&self) -> Vec<Connect> {
        self.connects.lock().unwrap().clone()
    }
}

impl Drop for FakeProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads the request head byte by byte (nothing of the tunnel with it), answers as
/// `mode` says and, for [`Mode::Tunnel`], copies bytes both ways until either side ends.
fn proxy_one(mut client: TcpStream, mode: Mode, connects: &Mutex<Vec<Connect>>) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(20)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    if mode == Mode::Hello {
        let first_byte = matches!(client.read(&mut byte), Ok(1)).then_some(byte[0]);
        connects.lock().unwrap().push(Connect {
            line: String::new(),
            authorization: None,
            first_byte,
        });
        return;
    }
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let line = head.lines().next().unwrap_or_default().to_string();
    let authorization = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("proxy-authorization")
            .then(|| value.trim().to_string())
    });
    let target = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut connect = Connect {
        line,
        authorization,
        first_byte: None,
    };
    match mode {
        Mode::Refuse => {
            connects.lock().unwrap().push(connect);
            let _ = client.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        }
        Mode::FirstByte => {
            let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
            if let Ok(1) = client.read(&mut byte) {
                connect.first_byte = Some(byte[0]);
            }
            connects.lock().unwrap().push(connect);
        }
        Mode::Hello => {}
        Mode::Tunnel => {
            connects.lock().unwrap().push(connect);
            let Ok(upstream) = TcpStream::connect(&target) else {
                let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
                return;
            };
            let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
            let _ = client.set_read_timeout(None);
            let (mut client_reader, mut upstream_writer) =
                (client.try_clone().unwrap(), upstream.try_clone().unwrap());
            let upward = thread::spawn(move || {
                let _ = std::io::copy(&mut client_reader, &mut upstream_writer);
                let _ = upstream_writer.shutdown(Shutdown::Write);
            });
            let (mut upstream_reader, mut client_writer) = (upstream, client);
            let _ = std::io::copy(&mut upstream_reader, &mut client_writer);
            let _ = client_writer.shutdown(Shutdown::Both);
            let _ = upward.join();
        }
    }
}

/// `outdated --json` for a project whose one profile uses `image`, with `variables` set.
fn outdated_with(directory: &Path, image: &str, variables: &[(&str, &str)]) -> Run {
    std::fs::create_dir_all(directory.join("envctl")).unwrap();
    std::fs::write(
        directory.join("envctl").join("proxied.toml"),
        format!("image = \"{image}\"\n"),
    )
    .unwrap();
    Envctl::in_folder(directory)
        .args(["outdated", "--json"])
        .timeout(Duration::from_secs(120))
        .envs(variables.iter().copied())
        .run()
}

/// The client's tag list for `image` through `proxy` within `timeout`, or its error as
/// text, on a runtime of its own (as a command runs it); a panic after a minute.
fn tag_list_via(image: &str, proxy: Proxy, timeout: Duration) -> Result<Vec<String>, String> {
    let image: ImageReference = image.parse().unwrap();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let client = RegistryClient::new(timeout, proxy);
        let list = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(client.tag_list(&image));
        let _ = sender.send(
            list.map(|list| list.tags)
                .map_err(|error| error.to_string()),
        );
    });
    receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("the tag list did not finish within a minute")
}

fn proxy_variables(proxies: &[(&str, String)], no_proxy: Option<&str>) -> ProxyVariables {
    ProxyVariables {
        proxies: proxies
            .iter()
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect(),
        no_proxy: no_proxy.map(str::to_string),
    }
}

#[test]
fn outdated_reaches_an_http_registry_through_the_proxy_with_its_credentials() {
    let registry = FakeRegistry::start(two_pages);
    let proxy = FakeProxy::start(Mode::Tunnel);
    let directory = tempfile::tempdir().unwrap();
    let Run {
        code,
        stdout,
        stderr,
    } = outdated_with(
        directory.path(),
        &format!("{}/team/app:1.0.0", registry.host_port()),
        &[(
            "HTTP_PROXY",
            &format!("http://team%40corp:s3cret@{}", proxy.addr),
        )],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("\"2.0.0\""), "{stdout}");
    assert!(stdout.contains("\"current_digest\": \"sha256:"), "{stdout}");
    let connects = proxy.connects();
    assert!(!connects.is_empty(), "the proxy was not asked");
    for connect in &connects {
        assert_eq!(
            connect.line,
            format!("CONNECT {} HTTP/1.1", registry.host_port()),
            "{connects:?}"
        );
        // base64 of `team@corp:s3cret`.
        assert_eq!(
            connect.authorization.as_deref(),
            Some("Basic dGVhbUBjb3JwOnMzY3JldA=="),
            "{connects:?}"
        );
    }
    // Both pages and the manifest came through the tunnel.
    assert!(registry.requests().len() >= 3, "{:?}", registry.requests());
}

#[test]
fn hosts_no_proxy_names_are_reached_directly() {
    let registry = FakeRegistry::start(two_pages);
    let proxy = FakeProxy::start(Mode::Refuse);
    let directory = tempfile::tempdir().unwrap();
    let Run {
        code,
        stdout,
        stderr,
    } = outdated_with(
        directory.path(),
        &format!("{}/team/app:1.0.0", registry.host_port()),
        &[
            ("ALL_PROXY", &format!("http://{}", proxy.addr)),
            ("no_proxy", "localhost, 127.0.0.1"),
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("\"2.0.0\""), "{stdout}");
    assert!(proxy.connects().is_empty(), "{:?}", proxy.connects());
}

#[test]
fn a_proxy_that_refuses_the_tunnel_is_the_network_with_its_hint() {
    let registry = FakeRegistry::start(two_pages);
    let proxy = FakeProxy::start(Mode::Refuse);
    let directory = tempfile::tempdir().unwrap();
    let Run {
        code,
        stdout,
        stderr,
    } = outdated_with(
        directory.path(),
        &format!("{}/team/app:1.0.0", registry.host_port()),
        &[("HTTPS_PROXY", &proxy.addr.to_string())],
    );
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stderr.contains("cannot be reached"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the proxy http://{} (HTTPS_PROXY) refused a tunnel to {}",
            proxy.addr,
            registry.host_port()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("check the network or a proxy"), "{stderr}");
    assert!(registry.requests().is_empty(), "{:?}", registry.requests());
}

#[test]
fn an_https_registry_is_reached_by_tls_inside_the_tunnel() {
    let proxy = FakeProxy::start(Mode::FirstByte);
    // A name no resolver knows: only the proxy may resolve it.
    let error = tag_list_via(
        "registry.envctl-test.invalid/team/app:1.0.0",
        Proxy::from_variables(&proxy_variables(
            &[("https_proxy", format!("http://{}", proxy.addr))],
            Some("localhost"),
        )),
        Duration::from_secs(20),
    )
    .unwrap_err();
    let connects = proxy.connects();
    assert_eq!(connects.len(), 1, "{connects:?}");
    assert_eq!(
        connects[0].line,
        "CONNECT registry.envctl-test.invalid:443 HTTP/1.1"
    );
    // 22: a TLS handshake record, the ClientHello.
    assert_eq!(connects[0].first_byte, Some(22), "{connects:?}");
    // The proxy closed the tunnel during the handshake: the network.
    assert!(error.contains("cannot be reached"), "{error}");
}

#[test]
fn a_registry_that_never_answers_is_unreachable_within_the_timeout() {
    let blackhole = crate::support::registry::Blackhole::start();
    let started = Instant::now();
    let error = tag_list_via(
        &format!("{}/team/app:1.0.0", blackhole.address),
        Proxy::none(),
        Duration::from_secs(1),
    )
    .unwrap_err();
    let took = started.elapsed();
    assert!(error.contains("cannot be reached"), "{error}");
    assert!(error.contains("no answer within 1 s"), "{error}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn an_https_proxy_is_spoken_to_in_tls() {
    let proxy = FakeProxy::start(Mode::Hello);
    let error = tag_list_via(
        "registry.envctl-test.invalid/team/app:1.0.0",
        Proxy::from_variables(&proxy_variables(
            &[("ALL_PROXY", format!("https://{}", proxy.addr))],
            None,
        )),
        Duration::from_secs(20),
    )
    .unwrap_err();
    let connects = proxy.connects();
    assert_eq!(connects.len(), 1, "{connects:?}");
    // A TLS handshake with the proxy itself, before any CONNECT.
    assert_eq!(connects[0].first_byte, Some(22), "{connects:?}");
    assert!(error.contains("cannot be reached"), "{error}");
}
