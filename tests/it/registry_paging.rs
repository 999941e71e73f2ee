//! `envctl outdated` and the registry client against registries that page their tag lists
//! (`Link: <…>; rel="next"`, as GHCR, NGC and Harbor do): a tiny fake registry on a loopback
//! `TcpListener` thread — envctl speaks plain HTTP to `127.0.0.0/8`, as the daemon does —
//! so no Docker daemon and no registry binary is needed.
//!
//! Later pages are read; a next link to another host (where the bearer token must not go),
//! back to a page already read, or that cannot be parsed ends the list with a note; a
//! registry whose pages never end is read up to `MAX_TAG_PAGES` pages, and the note says so.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::{Value, json};

use envctl::profile::image::ImageReference;
use envctl_ops::registry::proxy::Proxy;
use envctl_ops::registry::{
    MAX_PAGE_BYTES, MAX_TAG_LIST_BYTES, MAX_TAG_PAGES, RegistryClient, Tags,
};

use crate::support::cli::{Envctl, Run};

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// One request the fake registry received.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// Path and query, as sent.
    pub(crate) target: String,
    pub(crate) authorization: Option<String>,
}

/// What the fake registry answers.
pub(crate) struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn json(body: Value, headers: &[(&str, &str)]) -> Response {
        Response {
            status: 200,
            headers: headers
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .chain([("Content-Type".to_string(), "application/json".to_string())])
                .collect(),
            body: body.to_string(),
        }
    }

    fn tags(tags: &[&str], link: Option<&str>) -> Response {
        let body = json!({ "name": "team/app", "tags": tags });
        match link {
            Some(link) => Response::json(body, &[("Link", link)]),
            None => Response::json(body, &[]),
        }
    }

    fn manifest() -> Response {
        Response::json(json!({}), &[("Docker-Content-Digest", DIGEST)])
    }

    fn status(status: u16, headers: &[(&str, &str)]) -> Response {
        Response {
            status,
            headers: headers
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            body: "{}".into(),
        }
    }
}

type Handler = dyn Fn(&Request, SocketAddr) -> Response + Send + Sync;

/// An HTTP/1.1 server on `127.0.0.1:<free port>` that answers every request with
/// `handler` (one connection at a time, `Connection: close`) and records what it got.
pub(crate) struct FakeRegistry {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeRegistry {
    pub(crate) fn start(
        handler: impl Fn(&Request, SocketAddr) -> Response + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Box<Handler> = Box::new(handler);
        let thread = {
            let requests = Arc::clone(&requests);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    serve(stream, addr, &*handler, &requests);
                }
            })
        };
        FakeRegistry {
            addr,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn host_port(&self) -> String {
        self.addr.to_string()
    }

    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    fn tag_list_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|request| request.target.contains("/tags/list"))
            .collect()
    }
}

impl Drop for FakeRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees `stop`.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request from `stream`, answers it and closes the connection.
fn serve(stream: TcpStream, addr: SocketAddr, handler: &Handler, requests: &Mutex<Vec<Request>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(reader_stream) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reader_stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let target = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("authorization")
        {
            authorization = Some(value.trim().to_string());
        }
    }
    let request = Request {
        target,
        authorization,
    };
    requests.lock().unwrap().push(request.clone());
    let response = handler(&request, addr);
    let mut text = format!("HTTP/1.1 {} Fake\r\n", response.status);
    for (name, value) in &response.headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        response.body.len(),
        response.body
    ));
    let mut stream = stream;
    let _ = stream.write_all(text.as_bytes());
    let _ = stream.flush();
}

/// `outdated` for a project whose one profile uses `image`.
fn outdated(directory: &Path, image: &str) -> Run {
    std::fs::create_dir_all(directory.join("envctl")).unwrap();
    std::fs::write(
        directory.join("envctl").join("paged.toml"),
        format!("image = \"{image}\"\n"),
    )
    .unwrap();
    Envctl::in_folder(directory)
        .args(["outdated", "--json"])
        .timeout(Duration::from_secs(120))
        .run()
}

/// The client's tag list for `image`, or a panic when it takes longer than a minute (a
/// loop would otherwise hang the test run).
fn tag_list(image: &str) -> Tags {
    tag_list_result(image).unwrap()
}

/// The client's tag list for `image`, or its error as text.
fn tag_list_result(image: &str) -> Result<Tags, String> {
    let image: ImageReference = image.parse().unwrap();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let client = RegistryClient::new(Duration::from_secs(20), Proxy::none());
        let list = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(client.tag_list(&image));
        let _ = sender.send(list.map_err(|error| error.to_string()));
    });
    receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("the tag list did not finish within a minute")
}

/// The reviewer's registry: page 1 holds 1.0.0 and 1.1.0 and links to page 2, which
/// holds 2.0.0.
pub(crate) fn two_pages(request: &Request, _: SocketAddr) -> Response {
    let target = request.target.as_str();
    if target.starts_with("/v2/team/app/tags/list") {
        if target.contains("last=1.1.0") {
            Response::tags(&["2.0.0"], None)
        } else {
            Response::tags(
                &["1.0.0", "1.1.0"],
                Some("</v2/team/app/tags/list?n=2&last=1.1.0>; rel=\"next\""),
            )
        }
    } else if target.starts_with("/v2/team/app/manifests/") {
        Response::manifest()
    } else {
        Response::status(404, &[])
    }
}

#[test]
fn outdated_reports_newer_tags_from_later_pages() {
    let registry = FakeRegistry::start(two_pages);
    let directory = tempfile::tempdir().unwrap();
    let image = format!("{}/team/app:1.0.0", registry.host_port());
    let Run {
        code,
        stdout,
        stderr,
    } = outdated(directory.path(), &image);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let entry = &report["profiles"][0];
    assert_eq!(entry["error"], Value::Null, "{report}");
    assert_eq!(entry["newer_tags"], json!(["2.0.0", "1.1.0"]), "{report}");
    assert_eq!(entry["current_digest"], DIGEST);
    let pages: Vec<String> = registry
        .tag_list_requests()
        .into_iter()
        .map(|request| request.target)
        .collect();
    assert_eq!(
        pages,
        [
            "/v2/team/app/tags/list?n=1000",
            "/v2/team/app/tags/list?n=2&last=1.1.0"
        ]
    );
}

#[test]
fn the_client_reads_every_page_once_without_a_note() {
    let registry = FakeRegistry::start(two_pages);
    let list = tag_list(&format!("{}/team/app:1.0.0", registry.host_port()));
    assert_eq!(list.tags, ["1.0.0", "1.1.0", "2.0.0"]);
    assert_eq!(list.incomplete, None);
}

#[test]
fn the_token_stays_on_the_registrys_host() {
    const TOKEN: &str = "secret-token";
    // Where page 2's next link points: it must never be asked anything.
    let elsewhere = FakeRegistry::start(|_, _| Response::tags(&["9.0.0"], None));
    let elsewhere_url = format!(
        "http://{}/v2/team/app/tags/list?n=1&last=1.1.0",
        elsewhere.host_port()
    );
    let link_elsewhere = format!("<{elsewhere_url}>; rel=\"next\"");
    let registry = FakeRegistry::start(move |request, addr| {
        let target = request.target.as_str();
        if target.starts_with("/token") {
            return Response::json(json!({ "token": TOKEN }), &[]);
        }
        if request.authorization.as_deref() != Some(&format!("Bearer {TOKEN}")) {
            let challenge = format!(
                "Bearer realm=\"http://{addr}/token\",service=\"fake\",scope=\"repository:team/app:pull\""
            );
            return Response::status(401, &[("WWW-Authenticate", challenge.as_str())]);
        }
        if target.contains("last=1.0.0") {
            Response::tags(&["1.1.0"], Some(&link_elsewhere))
        } else {
            Response::tags(&["1.0.0"], Some("<?n=1&last=1.0.0>; rel=\"next\""))
        }
    });
    let list = tag_list(&format!("{}/team/app:1.0.0", registry.host_port()));
    assert_eq!(list.tags, ["1.0.0", "1.1.0"]);
    let note = list
        .incomplete
        .expect("a next link to another host is noted");
    assert!(note.contains("another host"), "{note}");
    assert!(note.contains(&elsewhere_url), "{note}");
    assert!(
        elsewhere.requests().is_empty(),
        "the other host was asked: {:?}",
        elsewhere.requests()
    );
    // One token, fetched once, sent with the second page too.
    let requests = registry.requests();
    let tokens = requests
        .iter()
        .filter(|request| request.target.starts_with("/token"))
        .count();
    assert_eq!(tokens, 1, "{requests:?}");
    let second = requests
        .iter()
        .find(|request| request.target.contains("last=1.0.0"))
        .unwrap();
    assert_eq!(
        second.authorization.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

#[test]
fn a_link_back_to_a_page_already_read_ends_the_list() {
    let registry = FakeRegistry::start(|request, _| {
        if request.target.contains("last=1.1.0") {
            // Back to the first page, as a malformed or buggy registry might.
            Response::tags(
                &["2.0.0", "1.0.0"],
                Some("</v2/team/app/tags/list?n=1000>; rel=\"next\""),
            )
        } else {
            Response::tags(
                &["1.0.0", "1.1.0"],
                Some("</v2/team/app/tags/list?n=2&last=1.1.0>; rel=\"next\""),
            )
        }
    });
    let list = tag_list(&format!("{}/team/app:1.0.0", registry.host_port()));
    assert_eq!(list.tags, ["1.0.0", "1.1.0", "2.0.0"]);
    let note = list.incomplete.expect("a repeated page is noted");
    assert!(note.contains("already read"), "{note}");
    assert_eq!(registry.tag_list_requests().len(), 2);
}

#[test]
fn endless_pages_stop_at_the_limit_and_say_so() {
    let registry = FakeRegistry::start(|request, _| {
        let page: usize = request
            .target
            .split_once("page=")
            .map_or(1, |(_, number)| number.parse().unwrap());
        let tag = format!("1.{page}.0");
        let link = format!(
            "</v2/team/app/tags/list?n=1&page={}>; rel=\"next\"",
            page + 1
        );
        Response::tags(&[tag.as_str()], Some(&link))
    });
    let list = tag_list(&format!("{}/team/app:1.0.0", registry.host_port()));
    assert_eq!(list.tags.len(), MAX_TAG_PAGES);
    assert_eq!(list.tags.last().unwrap(), &format!("1.{MAX_TAG_PAGES}.0"));
    assert_eq!(registry.tag_list_requests().len(), MAX_TAG_PAGES);
    let note = list.incomplete.expect("the page limit is noted");
    assert!(
        note.contains(&format!("at most {MAX_TAG_PAGES} pages")),
        "{note}"
    );
}

#[test]
fn a_malformed_link_keeps_the_page_and_says_so() {
    let registry = FakeRegistry::start(|_, _| {
        Response::tags(
            &["1.0.0", "1.1.0"],
            Some("/v2/team/app/tags/list?last=1.1.0; rel=\"next\""),
        )
    });
    let list = tag_list(&format!("{}/team/app:1.0.0", registry.host_port()));
    assert_eq!(list.tags, ["1.0.0", "1.1.0"]);
    let note = list.incomplete.expect("an unreadable Link header is noted");
    assert!(note.contains("cannot be read"), "{note}");
    assert_eq!(registry.tag_list_requests().len(), 1);
}

#[test]
fn outdated_says_when_the_tag_list_stopped_early() {
    let registry = FakeRegistry::start(|request, _| {
        if request.target.starts_with("/v2/team/app/manifests/") {
            Response::manifest()
        } else {
            Response::tags(
                &["1.0.0", "1.1.0"],
                Some("/v2/team/app/tags/list?last=1.1.0; rel=\"next\""),
            )
        }
    });
    let directory = tempfile::tempdir().unwrap();
    let image = format!("{}/team/app:1.0.0", registry.host_port());
    let Run {
        code,
        stdout,
        stderr,
    } = outdated(directory.path(), &image);
    assert_eq!(
        code, 0,
        "a partial list is a warning, not a failure: {stderr}"
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let incomplete = report["profiles"][0]["incomplete"].as_str().unwrap();
    assert!(incomplete.contains("cannot be read"), "{incomplete}");
    assert!(
        stderr.contains("paged: ") && stderr.contains("cannot be read"),
        "said on stderr: {stderr}"
    );
    assert_eq!(report["profiles"][0]["newer_tags"][0], "1.1.0", "{stdout}");
}

/// A registry that wants `Bearer TOKEN` on every tag-list request and answers the first
/// with `redirect` (a path on its own host, or a URL elsewhere).
fn redirecting(redirect: String) -> impl Fn(&Request, SocketAddr) -> Response + Send + Sync {
    const TOKEN: &str = "redirect-token";
    move |request, addr| {
        let target = request.target.as_str();
        if target.starts_with("/token") {
            return Response::json(json!({ "token": TOKEN }), &[]);
        }
        if request.authorization.as_deref() != Some(&format!("Bearer {TOKEN}")) {
            let challenge = format!("Bearer realm=\"http://{addr}/token\",service=\"fake\"");
            return Response::status(401, &[("WWW-Authenticate", challenge.as_str())]);
        }
        if target.starts_with("/v2/team/app/tags/list") {
            Response::status(307, &[("Location", redirect.as_str())])
        } else if target.starts_with("/moved/tags") {
            Response::tags(&["1.0.0", "1.2.0"], None)
        } else {
            Response::status(404, &[])
        }
    }
}

#[test]
fn a_redirect_within_the_registrys_host_keeps_the_token() {
    let registry = FakeRegistry::start(redirecting("/moved/tags?n=1000".into()));
    let list = tag_list(&format!("{}/team/app:1.0.0", registry.host_port()));
    assert_eq!(list.tags, ["1.0.0", "1.2.0"]);
    let moved = registry
        .requests()
        .into_iter()
        .find(|request| request.target.starts_with("/moved/"))
        .expect("the redirect was followed");
    assert_eq!(
        moved.authorization.as_deref(),
        Some("Bearer redirect-token")
    );
}

#[test]
fn a_redirect_off_the_host_that_needs_the_token_names_the_redirect() {
    // The other host wants a token too, and never gets the first registry's.
    let elsewhere = FakeRegistry::start(redirecting(String::new()));
    let registry = FakeRegistry::start(redirecting(format!(
        "http://{}/moved/tags?n=1000",
        elsewhere.host_port()
    )));
    let error = tag_list_result(&format!("{}/team/app:1.0.0", registry.host_port())).unwrap_err();
    assert!(
        error.contains("redirected to") && error.contains(&elsewhere.host_port()),
        "{error}"
    );
    assert!(!error.contains("refused access"), "{error}");
    assert!(
        elsewhere
            .requests()
            .iter()
            .all(|request| request.authorization.is_none()),
        "the token left the registry's host: {:?}",
        elsewhere.requests()
    );
    let directory = tempfile::tempdir().unwrap();
    let image = format!("{}/team/app:1.0.0", registry.host_port());
    let Run { code, stdout, .. } = outdated(directory.path(), &image);
    assert_eq!(code, 1, "{stdout}");
    assert!(!stdout.contains("private repositories"), "{stdout}");
    assert!(stdout.contains("redirected to"), "{stdout}");
}

#[test]
fn a_page_past_the_size_limit_is_an_error_read_no_further() {
    let registry = FakeRegistry::start(|_, _| {
        let tag = "t".repeat(100);
        let count = usize::try_from(MAX_PAGE_BYTES).unwrap() / 100 + 10;
        let tags: Vec<&str> = std::iter::repeat_n(tag.as_str(), count).collect();
        Response::tags(&tags, None)
    });
    let error = tag_list_result(&format!("{}/team/app:1.0.0", registry.host_port())).unwrap_err();
    assert!(
        error.contains(&format!("larger than {MAX_PAGE_BYTES} bytes")),
        "{error}"
    );
}

/// Issue 30, class 6: pages each just under the page limit stop at the bound on the whole
/// list (not after 50 of them), and names Docker would refuse as tags (longer than 128
/// characters) are not kept.
#[test]
fn large_pages_stop_at_the_list_limit_and_overlong_tags_are_dropped() {
    let registry = FakeRegistry::start(|request, _| {
        let page: usize = request
            .target
            .split_once("page=")
            .map_or(1, |(_, number)| number.parse().unwrap());
        let tag = format!("1.{page}.0");
        let overlong: Vec<String> = (0..6000).map(|index| format!("{index:0>140}")).collect();
        let mut tags: Vec<&str> = overlong.iter().map(String::as_str).collect();
        tags.push(tag.as_str());
        let link = format!(
            "</v2/team/app/tags/list?n=1&page={}>; rel=\"next\"",
            page + 1
        );
        Response::tags(&tags, Some(&link))
    });
    let list = tag_list(&format!("{}/team/app:1.0.0", registry.host_port()));
    assert!(
        list.tags.iter().all(|tag| tag.len() <= 128),
        "{:?}",
        list.tags.first()
    );
    let pages = registry.tag_list_requests().len();
    assert!(pages < MAX_TAG_PAGES, "{pages} pages read");
    assert_eq!(list.tags.len(), pages);
    let note = list.incomplete.expect("the list limit is noted");
    assert!(
        note.contains(&format!("at most {} MiB", MAX_TAG_LIST_BYTES >> 20)),
        "{note}"
    );
}

/// Issue 30, class 8: what went wrong with a registry's token service is said as that: a
/// realm on a closed port is not "the registry cannot be reached", a realm redirecting
/// (to a cloud's metadata address) is not "private repositories need credentials", and an
/// oversized token or a challenge with control characters is an answer envctl cannot use.
#[test]
fn token_service_failures_name_the_token_service() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let registry = FakeRegistry::start(move |request, address| {
        let challenge = |realm: String| {
            Response::status(
                401,
                &[(
                    "WWW-Authenticate",
                    &format!("Bearer realm=\"{realm}\",service=\"fake\""),
                )],
            )
        };
        let target = request.target.as_str();
        if target.starts_with("/token") {
            return if target.contains("huge") {
                Response::json(json!({ "token": "t".repeat(900 * 1024) }), &[])
            } else {
                Response::status(302, &[("Location", "http://169.254.169.254/latest/")])
            };
        }
        if target.contains("/closed/") {
            challenge(format!("http://127.0.0.1:{closed}/token"))
        } else if target.contains("/huge/") {
            challenge(format!("http://{address}/token?huge"))
        } else if target.contains("/escape/") {
            Response::status(
                401,
                &[("WWW-Authenticate", "Bearer realm=\"http://x/\u{1b}[31m\"")],
            )
        } else {
            challenge(format!("http://{address}/token"))
        }
    });
    let host = registry.host_port();
    let error = tag_list_result(&format!("{host}/closed/app:1")).unwrap_err();
    assert!(error.contains("the token service of"), "{error}");
    let error = tag_list_result(&format!("{host}/redirect/app:1")).unwrap_err();
    assert!(error.contains("answered HTTP 302"), "{error}");
    assert!(!error.contains("refused access"), "{error}");
    let error = tag_list_result(&format!("{host}/huge/app:1")).unwrap_err();
    assert!(error.contains("cannot read"), "{error}");
    assert!(!error.contains("cannot be reached"), "{error}");
    // hyper refuses the header itself; either way an answer, not the network.
    let error = tag_list_result(&format!("{host}/escape/app:1")).unwrap_err();
    assert!(error.contains("cannot read"), "{error}");
    assert!(!error.contains("cannot be reached"), "{error}");
}
