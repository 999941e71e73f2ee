//! A GET whose body envctl reads itself, for the long answers (logs, stats) and the ones
//! it bounds in size (the container list, `/info`): bollard's decoders look for a newline
//! from the start of their buffer on every read, so a 20 MB line cost time quadratic in
//! its length, and they give no hold on the body once the headers came. Here each read
//! brings at most [`READ_BYTES`], the caller keeps the deadline, and each byte is looked
//! at once.
//!
//! The request goes through the same client as bollard's (`engine::connector`): the same
//! streams over every scheme, and over TLS or ssh the same kept connection, so a command
//! costs one handshake, not one per request.

use std::time::Duration;

use crate::{Engine, EngineError};
use envctl_facts::engine::EngineKind;

/// The most bytes one [`Body::next`] brings.
pub(crate) const READ_BYTES: usize = 64 * 1024;

/// The most of an error answer's body envctl reads for its message.
const MAX_ERROR_BYTES: usize = 64 * 1024;

/// A 2xx answer's body, read as it comes.
pub(crate) struct Body {
    incoming: hyper::body::Incoming,
    /// What came in the last frame and was not handed out yet.
    pending: bytes::Bytes,
    done: bool,
}

impl Engine {
    /// `GET path_and_query`, the status line and headers within `deadline`. A non-2xx
    /// answer is the daemon's error, as bollard gives it.
    pub(crate) async fn get_body(
        &self,
        path_and_query: &str,
        deadline: Duration,
    ) -> Result<Body, EngineError> {
        Ok(self.get_answer(path_and_query, deadline).await?.1)
    }

    /// [`Engine::get_body`], with the engine the answer's headers name.
    async fn get_answer(
        &self,
        path_and_query: &str,
        deadline: Duration,
    ) -> Result<(EngineKind, Body), EngineError> {
        let stopped = || EngineError::StoppedAnswering {
            endpoint: self.at(),
            request: format!("GET {path_and_query}"),
            detail: format!("no answer within {} s", deadline.as_secs()),
        };
        let (status, engine, mut body) = tokio::time::timeout(deadline, self.get(path_and_query))
            .await
            .map_err(|_| stopped())??;
        if (200..300).contains(&status) {
            return Ok((engine, body));
        }
        let mut text = Vec::new();
        let read = async {
            while text.len() < MAX_ERROR_BYTES && body.next(&mut text).await? > 0 {}
            Ok::<_, std::io::Error>(())
        };
        tokio::time::timeout(deadline, read)
            .await
            .map_err(|_| stopped())?
            .map_err(|error| self.io_error(error))?;
        #[derive(serde::Deserialize)]
        struct Message {
            message: String,
        }
        let message = serde_json::from_slice::<Message>(&text)
            .map(|message| message.message)
            .unwrap_or_else(|_| String::from_utf8_lossy(&text).trim().to_string());
        let message = super::error::said(status, message);
        Err(EngineError::Daemon {
            endpoint: self.at(),
            status,
            message,
        })
    }

    /// `GET path_and_query` through the connection's client: the status, the engine the
    /// headers name, and the body.
    async fn get(&self, path_and_query: &str) -> Result<(u16, EngineKind, Body), EngineError> {
        let invalid = |_| EngineError::InvalidReference {
            what: "request path",
            value: path_and_query.to_string(),
        };
        let request = ::http::Request::get(format!("http://docker{path_and_query}"))
            .header("User-Agent", "envctl")
            .body(bollard::body_full(bytes::Bytes::new()))
            .map_err(invalid)?;
        let answer = self
            .client
            .send(request)
            .await
            .map_err(|error| self.classify(error))?;
        let status = answer.status().as_u16();
        let engine = engine_named(answer.headers());
        Ok((
            status,
            engine,
            Body {
                incoming: answer.into_body(),
                pending: bytes::Bytes::new(),
                done: false,
            },
        ))
    }

    /// `GET path_and_query`'s JSON answer, read as it comes within the answer deadline
    /// (`what` names the request in a stalled-answer error) and at most `limit` bytes: a
    /// longer answer, or one that is not this JSON, is a bad answer quoting its start.
    pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path_and_query: &str,
        what: &'static str,
        limit: usize,
    ) -> Result<T, EngineError> {
        // A whole cycle: its turn where connections are costly (`Engine::turn`).
        let _turn = self.turn().await;
        let mut body = self
            .get_body(path_and_query, self.answer_deadline())
            .await?;
        let mut bytes = Vec::new();
        let read = async {
            while bytes.len() <= limit {
                if body.next(&mut bytes).await? == 0 {
                    break;
                }
            }
            Ok::<(), std::io::Error>(())
        };
        self.with_deadline(what, self.answer_deadline(), read)
            .await?
            .map_err(|error| self.io_error(error))?;
        let bad_answer = |problem: String| EngineError::BadAnswer {
            endpoint: self.at(),
            problem,
            answer: String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned(),
        };
        if bytes.len() > limit {
            return Err(bad_answer(format!("an answer over {} MiB", limit >> 20)));
        }
        serde_json::from_slice(&bytes).map_err(|error| bad_answer(error.to_string()))
    }

    /// `GET /_ping`, its answer read to the end (so the connection is kept) within
    /// `deadline`, and the engine its headers name remembered ([`Engine::known_kind`]):
    /// the check that the daemon answers and the word for which one does, in one request.
    pub(crate) async fn ping_named(&self, deadline: Duration) -> Result<EngineKind, EngineError> {
        let stopped = || EngineError::StoppedAnswering {
            endpoint: self.at(),
            request: "GET /_ping".into(),
            detail: format!("no answer within {} s", deadline.as_secs()),
        };
        let ping = async {
            let (engine, mut body) = self.get_answer("/_ping", deadline).await?;
            let mut rest = Vec::new();
            while rest.len() < MAX_ERROR_BYTES
                && body
                    .next(&mut rest)
                    .await
                    .map_err(|error| self.io_error(error))?
                    > 0
            {}
            Ok::<_, EngineError>(engine)
        };
        let engine = tokio::time::timeout(deadline, ping)
            .await
            .map_err(|_| stopped())??;
        self.remember_ping(engine);
        Ok(engine)
    }

    /// Which engine answers, from the headers of a `GET /_ping`: as cheap as the ping,
    /// where `/version` costs Docker 20.10 some 8 ms (it asks containerd and runc). Only
    /// for how messages and hints name the engine ([`Engine::known_kind`]); what must
    /// know the engine's version asks `/version`. After [`Engine::ping`] it is known
    /// without another request.
    pub async fn identify_by_ping(&self, deadline: Duration) -> Result<EngineKind, EngineError> {
        if let Some(engine) = self.pinged.get() {
            return Ok(*engine);
        }
        self.ping_named(deadline).await
    }

    /// An I/O error on the socket, named as bollard's would be.
    pub(crate) fn io_error(&self, error: std::io::Error) -> EngineError {
        self.classify(bollard::errors::Error::IOError { err: error })
    }
}

/// The engine an answer's headers name: `Libpod-Api-Version` is Podman's, a `Server:
/// Docker/…` Docker's.
fn engine_named(headers: &::http::HeaderMap) -> EngineKind {
    if headers.contains_key("libpod-api-version") {
        return EngineKind::Podman;
    }
    let server = headers
        .get_all("server")
        .iter()
        .any(|value| value.as_bytes().starts_with(b"Docker/"));
    if server {
        EngineKind::DockerEngine
    } else {
        EngineKind::Unknown
    }
}

impl Body {
    /// Appends the next bytes of the body (at most [`READ_BYTES`]) to `buffer`; 0 at its
    /// end. Cancel-safe: what a frame brought is kept until it is handed out.
    pub(crate) async fn next(&mut self, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
        use http_body_util::BodyExt as _;
        while self.pending.is_empty() {
            if self.done {
                return Ok(0);
            }
            match self.incoming.frame().await {
                None => {
                    self.done = true;
                    return Ok(0);
                }
                Some(Err(error)) => {
                    self.done = true;
                    return Err(if error.is_incomplete_message() {
                        std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "the daemon closed the connection inside the answer",
                        )
                    } else {
                        std::io::Error::new(std::io::ErrorKind::InvalidData, error)
                    });
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.pending = data;
                    }
                }
            }
        }
        let taken = self.pending.split_to(self.pending.len().min(READ_BYTES));
        buffer.extend_from_slice(&taken);
        Ok(taken.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(lines: &[(&'static str, &'static str)]) -> ::http::HeaderMap {
        lines
            .iter()
            .map(|(name, value)| {
                (
                    ::http::HeaderName::from_static(name),
                    ::http::HeaderValue::from_static(value),
                )
            })
            .collect()
    }

    /// The `_ping` headers each engine sends (Docker 20.10, Podman 4.3 and 5.4, read off
    /// the CI's engines) name it; a server that names neither is unknown.
    #[test]
    fn ping_headers_name_the_engine() {
        let docker = headers(&[
            ("api-version", "1.41"),
            ("server", "Docker/20.10.24+dfsg1 (linux)"),
        ]);
        assert_eq!(engine_named(&docker), EngineKind::DockerEngine);
        let podman = headers(&[
            ("api-version", "1.41"),
            ("libpod-api-version", "5.4.2"),
            ("server", "Libpod/5.4.2 (linux)"),
        ]);
        assert_eq!(engine_named(&podman), EngineKind::Podman);
        let other = headers(&[("server", "nginx")]);
        assert_eq!(engine_named(&other), EngineKind::Unknown);
    }
}
