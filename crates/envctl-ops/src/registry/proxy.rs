//! Which proxy the registry client goes through, and the `CONNECT` tunnel through it.
//!
//! The rules are those the registry client followed before it moved onto hyper (ureq 3's
//! `Proxy::try_from_env`), so that a team's proxy settings keep working unchanged:
//!
//! - one proxy for every request, the first usable one of `ALL_PROXY`, `all_proxy`,
//!   `HTTPS_PROXY`, `https_proxy`, `HTTP_PROXY`, `http_proxy` (a value that is no proxy
//!   URL, or names a scheme no proxy speaks, is passed over for the next);
//! - `http://` (the scheme when none is written) and `https://` proxies are asked for a
//!   `CONNECT` tunnel, for `http` registries as for `https` ones, with `Basic` credentials
//!   when the URL carries some; the registry's TLS runs inside the tunnel;
//! - a `socks*://` proxy, which envctl does not speak, means a direct connection, as
//!   before (ureq without its SOCKS feature connected directly);
//! - `NO_PROXY` (else `no_proxy`): comma-separated hosts reached directly: `*` (every
//!   host), `*.suffix` or `.suffix`, `prefix*` or `prefix.`, or a host name exactly.
//!   Entries are trimmed, so `a, b` names `b` too.
//!
//! The variables come from `context.rs`, the one reader of the environment
//! (`Environment::proxy_variables`), handed in by `ops` as plain values: the adapter
//! never names the context.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use url::Url;

/// The variables that choose a proxy, as the environment holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyVariables {
    /// `(name, value)` of each proxy variable that is set, in the order they are tried.
    pub proxies: Vec<(String, String)>,
    /// `NO_PROXY`, else `no_proxy`.
    pub no_proxy: Option<String>,
}

/// The proxy variables, in the order they are tried.
pub const PROXY_VARIABLES: [&str; 6] = [
    "ALL_PROXY",
    "all_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
];

/// The variables that name hosts reached directly, in the order they are tried.
pub const NO_PROXY_VARIABLES: [&str; 2] = ["NO_PROXY", "no_proxy"];

/// How the registry client reaches hosts: directly, or through a `CONNECT` proxy.
#[derive(Debug, Clone, Default)]
pub struct Proxy {
    via: Option<Via>,
    direct: Vec<DirectHost>,
}

/// The proxy a tunnel is asked of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Via {
    /// The variable that named it, for messages.
    pub variable: String,
    /// `proxy.example:3128`, as messages show it (no credentials).
    pub shown: String,
    pub host: String,
    pub port: u16,
    /// An `https://` proxy: TLS to the proxy itself.
    pub tls: bool,
    /// `Basic …`, when the URL carries a user or a password.
    pub authorization: Option<String>,
}

/// A `NO_PROXY` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DirectHost {
    Every,
    Exactly(String),
    Prefix(String),
    Suffix(String),
}

impl DirectHost {
    fn parse(entry: &str) -> Option<DirectHost> {
        let entry = entry.trim().to_ascii_lowercase();
        Some(match entry.as_str() {
            "" => return None,
            "*" => DirectHost::Every,
            _ if entry.starts_with('*') => DirectHost::Suffix(entry[1..].to_string()),
            _ if entry.starts_with('.') => DirectHost::Suffix(entry),
            _ if entry.ends_with('*') => DirectHost::Prefix(entry[..entry.len() - 1].to_string()),
            _ if entry.ends_with('.') => DirectHost::Prefix(entry),
            _ => DirectHost::Exactly(entry),
        })
    }

    fn matches(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        match self {
            DirectHost::Every => true,
            DirectHost::Exactly(name) => host == *name,
            DirectHost::Prefix(prefix) => host.starts_with(prefix.as_str()),
            DirectHost::Suffix(suffix) => host.ends_with(suffix.as_str()),
        }
    }
}

impl Proxy {
    /// No proxy: every host directly.
    pub fn none() -> Proxy {
        Proxy::default()
    }

    /// The proxy the variables choose (see the module's rules).
    pub fn from_variables(variables: &ProxyVariables) -> Proxy {
        let mut proxy = Proxy {
            via: None,
            direct: variables
                .no_proxy
                .as_deref()
                .unwrap_or_default()
                .split(',')
                .filter_map(DirectHost::parse)
                .collect(),
        };
        for (variable, value) in &variables.proxies {
            match parse_proxy(variable, value) {
                Parsed::Connect(via) => {
                    proxy.via = Some(via);
                    break;
                }
                Parsed::Socks => break,
                Parsed::Unusable => {}
            }
        }
        proxy
    }

    /// The proxy to reach `host` (as a URL writes it: `[::1]` in brackets) through, or
    /// `None` to connect directly.
    pub fn for_host(&self, host: &str) -> Option<&Via> {
        let via = self.via.as_ref()?;
        if self.direct.iter().any(|entry| entry.matches(host)) {
            return None;
        }
        Some(via)
    }
}

enum Parsed {
    Connect(Via),
    Socks,
    Unusable,
}

/// A proxy variable's value: `[scheme://][user[:password]@]host[:port]`.
fn parse_proxy(variable: &str, value: &str) -> Parsed {
    let value = value.trim();
    if value.is_empty() {
        return Parsed::Unusable;
    }
    let written = if value.contains("://") {
        value.to_string()
    } else {
        format!("http://{value}")
    };
    let Ok(url) = Url::parse(&written) else {
        return Parsed::Unusable;
    };
    let tls = match url.scheme() {
        "http" => false,
        "https" => true,
        "socks4" | "socks4a" | "socks5" | "socks5h" | "socks" => return Parsed::Socks,
        _ => return Parsed::Unusable,
    };
    let Some(host) = url.host_str().filter(|host| !host.is_empty()) else {
        return Parsed::Unusable;
    };
    let port = url.port().unwrap_or(if tls { 443 } else { 80 });
    let authorization = if url.username().is_empty() && url.password().is_none() {
        None
    } else {
        let (Some(user), Some(password)) = (
            percent_decoded(url.username()),
            percent_decoded(url.password().unwrap_or_default()),
        ) else {
            return Parsed::Unusable;
        };
        Some(format!(
            "Basic {}",
            base64(format!("{user}:{password}").as_bytes())
        ))
    };
    Parsed::Connect(Via {
        variable: variable.to_string(),
        shown: format!("{}://{host}:{port}", url.scheme()),
        host: host.to_string(),
        port,
        tls,
        authorization,
    })
}

/// `%40` and the like in a proxy URL's user and password, decoded once (`+` stays a
/// plus); `None` when the bytes are no UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match (bytes[index], text.get(index + 1..index + 3)) {
            (b'%', Some(hex)) if hex.bytes().all(|byte| byte.is_ascii_hexdigit()) => {
                decoded.push(u8::from_str_radix(hex, 16).ok()?);
                index += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}

/// Standard base64 with padding (RFC 4648 §4), for the one `Proxy-Authorization` header:
/// a crate for it would be a second copy beside the engine's.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let group = match *chunk {
            [a] => u32::from(a) << 16,
            [a, b] => u32::from(a) << 16 | u32::from(b) << 8,
            [a, b, c, ..] => u32::from(a) << 16 | u32::from(b) << 8 | u32::from(c),
            [] => 0,
        };
        for position in 0..4 {
            if position <= chunk.len() {
                let index = (group >> (18 - 6 * position)) & 0x3f;
                text.push(char::from(ALPHABET[index as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// The longest answer to `CONNECT` envctl reads before its blank line.
const MAX_CONNECT_ANSWER: usize = 8 * 1024;

/// Asks the proxy at the other end of `stream` for a tunnel to `host:port` (`host` as a
/// URL writes it) and reads its answer up to the blank line, byte by byte so that
/// nothing of the tunnel is read with it. Anything but `200` is an error naming the
/// proxy and its answer.
pub async fn tunnel<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    via: &Via,
    host: &str,
    port: u16,
) -> io::Result<()> {
    let mut request = format!(
        "CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: {}\r\nProxy-Connection: Keep-Alive\r\n",
        super::http::USER_AGENT
    );
    if let Some(authorization) = &via.authorization {
        request.push_str(&format!("Proxy-Authorization: {authorization}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await?;
    stream.flush().await?;
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() >= MAX_CONNECT_ANSWER {
            return Err(io::Error::other(format!(
                "the proxy {} ({}) sent more than {MAX_CONNECT_ANSWER} bytes of headers for CONNECT",
                via.shown, via.variable
            )));
        }
        let byte = stream.read_u8().await.map_err(|error| {
            io::Error::new(
                error.kind(),
                format!(
                    "the proxy {} ({}) closed the connection before answering CONNECT: {error}",
                    via.shown, via.variable
                ),
            )
        })?;
        answer.push(byte);
    }
    let status_line = String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5));
    if status == Some("200") {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "the proxy {} ({}) refused a tunnel to {host}:{port}: `{}`",
        via.shown,
        via.variable,
        status_line.escape_debug()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variables(proxies: &[(&str, &str)], no_proxy: Option<&str>) -> ProxyVariables {
        ProxyVariables {
            proxies: proxies
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            no_proxy: no_proxy.map(str::to_string),
        }
    }

    #[test]
    fn the_first_usable_variable_names_the_proxy() {
        let proxy = Proxy::from_variables(&variables(
            &[
                ("ALL_PROXY", "not a url at all ::"),
                ("HTTPS_PROXY", "ftp://proxy.example:21"),
                ("HTTP_PROXY", "proxy.example:3128"),
            ],
            None,
        ));
        let via = proxy.for_host("ghcr.io").unwrap();
        assert_eq!(via.variable, "HTTP_PROXY");
        assert_eq!(
            (via.host.as_str(), via.port, via.tls),
            ("proxy.example", 3128, false)
        );
        assert_eq!(via.shown, "http://proxy.example:3128");
        let proxy =
            Proxy::from_variables(&variables(&[("HTTPS_PROXY", "https://p.example")], None));
        let via = proxy.for_host("ghcr.io").unwrap();
        assert_eq!((via.port, via.tls), (443, true));
        assert!(
            Proxy::from_variables(&variables(&[], None))
                .for_host("x")
                .is_none()
        );
        // A SOCKS proxy, which envctl does not speak, is a direct connection, as before.
        let proxy = Proxy::from_variables(&variables(
            &[
                ("ALL_PROXY", "socks5://p:1080"),
                ("HTTP_PROXY", "http://p:3128"),
            ],
            None,
        ));
        assert!(proxy.for_host("ghcr.io").is_none());
    }

    #[test]
    fn credentials_become_basic_authorization() {
        let proxy = Proxy::from_variables(&variables(
            &[("HTTPS_PROXY", "http://us%40er:pa+ss%3A@p.example:8080")],
            None,
        ));
        let via = proxy.for_host("nvcr.io").unwrap();
        assert_eq!(
            via.authorization.as_deref(),
            Some(format!("Basic {}", base64(b"us@er:pa+ss:")).as_str())
        );
        assert!(!via.shown.contains("pa"), "{}", via.shown);
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xff, 0xfe, 0xfd, 0x00]), "//79AA==");
    }

    #[test]
    fn no_proxy_names_the_hosts_reached_directly() {
        let proxy = Proxy::from_variables(&variables(
            &[("HTTP_PROXY", "http://p:3128")],
            Some("localhost, *.internal.example,.corp,10.0.*,[::1],"),
        ));
        for direct in [
            "localhost",
            "LOCALHOST",
            "a.internal.example",
            "x.corp",
            "10.0.0.7",
            "[::1]",
        ] {
            assert!(proxy.for_host(direct).is_none(), "{direct}");
        }
        for proxied in [
            "ghcr.io",
            "internal.example",
            "corp",
            "10.1.0.7",
            "127.0.0.1",
        ] {
            assert!(proxy.for_host(proxied).is_some(), "{proxied}");
        }
        let every =
            Proxy::from_variables(&variables(&[("HTTP_PROXY", "http://p:3128")], Some("*")));
        assert!(every.for_host("ghcr.io").is_none());
    }
}
