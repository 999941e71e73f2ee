//! A GET on the daemon's socket whose body envctl reads itself, for the long answers
//! (logs, stats): bollard's decoders look for a newline from the start of their buffer
//! on every read, so a 20 MB line cost time quadratic in its length, and they give no
//! hold on the body once the headers came. Here each read brings at most
//! [`READ_BYTES`], the caller keeps the deadline, and the framing (`Content-Length`,
//! chunked, or until close) is undone in one pass.

use std::time::Duration;

use tokio::io::{
    AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWriteExt as _, BufReader,
};

use crate::engine::{Engine, EngineError};
use crate::facts::engine::EngineKind;

/// The most bytes one [`Body::next`] brings.
pub(crate) const READ_BYTES: usize = 64 * 1024;

/// The longest status line and headers envctl reads.
const MAX_HEAD_BYTES: u64 = 64 * 1024;

/// The most of an error answer's body envctl reads for its message.
const MAX_ERROR_BYTES: usize = 64 * 1024;

trait Connection: AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Connection for T {}

/// How the body ends.
enum Framing {
    /// `Content-Length`: this many bytes are left.
    Length(u64),
    /// `Transfer-Encoding: chunked`: this many bytes are left of the current chunk (0:
    /// a chunk-size line comes next).
    Chunked(u64),
    /// Neither: the body ends when the daemon closes the connection.
    Close,
}

/// A 2xx answer's body, read as it comes.
pub(crate) struct Body {
    reader: BufReader<Box<dyn Connection>>,
    framing: Framing,
    done: bool,
}

impl Engine {
    /// `GET path_and_query` on a connection of its own, the status line and headers
    /// within `deadline`. A non-2xx answer is the daemon's error, as bollard gives it.
    pub(crate) async fn get_body(
        &self,
        path_and_query: &str,
        deadline: Duration,
    ) -> Result<Body, EngineError> {
        let stopped = || EngineError::StoppedAnswering {
            endpoint: self.at(),
            request: format!("GET {path_and_query}"),
            detail: format!("no answer within {} s", deadline.as_secs()),
        };
        let head = async {
            let mut connection = self.open_connection().await?;
            let request = format!(
                "GET {path_and_query} HTTP/1.1\r\nHost: docker\r\nUser-Agent: envctl\r\nConnection: close\r\n\r\n"
            );
            connection
                .write_all(request.as_bytes())
                .await
                .map_err(|error| self.io_error(error))?;
            let mut reader = BufReader::new(connection);
            let Head {
                status, framing, ..
            } = read_head(&mut reader)
                .await
                .map_err(|error| self.io_error(error))?;
            Ok::<_, EngineError>((
                status,
                Body {
                    reader,
                    framing,
                    done: false,
                },
            ))
        };
        let (status, mut body) = tokio::time::timeout(deadline, head)
            .await
            .map_err(|_| stopped())??;
        if (200..300).contains(&status) {
            return Ok(body);
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

    /// `GET path_and_query`'s JSON answer, read as it comes within the answer deadline
    /// (`what` names the request in a stalled-answer error) and at most `limit` bytes: a
    /// longer answer, or one that is not this JSON, is a bad answer quoting its start.
    pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path_and_query: &str,
        what: &'static str,
        limit: usize,
    ) -> Result<T, EngineError> {
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

    /// Which engine answers, from the headers of a `GET /_ping`: as cheap as the ping,
    /// where `/version` costs Docker 20.10 some 8 ms (it asks containerd and runc). Only
    /// for how messages and hints name the engine ([`Engine::known_kind`]); what must
    /// know the engine's version asks `/version`.
    pub async fn identify_by_ping(&self, deadline: Duration) -> Result<EngineKind, EngineError> {
        let head = async {
            let mut connection = self.open_connection().await?;
            connection
                .write_all(
                    b"GET /_ping HTTP/1.1\r\nHost: docker\r\nUser-Agent: envctl\r\nConnection: close\r\n\r\n",
                )
                .await
                .map_err(|error| self.io_error(error))?;
            let mut reader = BufReader::new(connection);
            read_head(&mut reader)
                .await
                .map_err(|error| self.io_error(error))
        };
        let head = tokio::time::timeout(deadline, head).await.map_err(|_| {
            EngineError::StoppedAnswering {
                endpoint: self.at(),
                request: "GET /_ping".into(),
                detail: format!("no answer within {} s", deadline.as_secs()),
            }
        })??;
        self.remember_ping(head.engine);
        Ok(head.engine)
    }

    async fn open_connection(&self) -> Result<Box<dyn Connection>, EngineError> {
        if let Some(path) = self.endpoint.strip_prefix("unix://") {
            let stream = tokio::net::UnixStream::connect(path)
                .await
                .map_err(|error| self.io_error(error))?;
            return Ok(Box::new(stream));
        }
        if let Some(address) = self
            .endpoint
            .strip_prefix("tcp://")
            .or_else(|| self.endpoint.strip_prefix("http://"))
        {
            let stream = tokio::net::TcpStream::connect(address.trim_end_matches('/'))
                .await
                .map_err(|error| self.io_error(error))?;
            return Ok(Box::new(stream));
        }
        Err(EngineError::UnsupportedHost {
            endpoint: self.at(),
        })
    }

    /// An I/O error on the socket, named as bollard's would be.
    pub(crate) fn io_error(&self, error: std::io::Error) -> EngineError {
        self.classify(bollard::errors::Error::IOError { err: error })
    }
}

/// An answer's status line and headers, as far as envctl reads them.
struct Head {
    status: u16,
    framing: Framing,
    /// The engine the headers name: `Libpod-Api-Version` is Podman's, a `Server:
    /// Docker/…` Docker's.
    engine: EngineKind,
}

/// The status code, the body's framing and the engine the headers name.
async fn read_head(reader: &mut BufReader<Box<dyn Connection>>) -> std::io::Result<Head> {
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut head = Vec::new();
    let mut limited = (&mut *reader).take(MAX_HEAD_BYTES);
    loop {
        let start = head.len();
        if limited.read_until(b'\n', &mut head).await? == 0 || !head.ends_with(b"\n") {
            return Err(invalid("the answer's headers end early or are too long"));
        }
        if head[start..].trim_ascii().is_empty() {
            break;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_ascii_whitespace().nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| invalid("the answer has no HTTP status line"))?;
    let mut framing = Framing::Close;
    let mut engine = EngineKind::Unknown;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("libpod-api-version") {
            engine = EngineKind::Podman;
        } else if name.eq_ignore_ascii_case("server")
            && value.starts_with("Docker/")
            && engine == EngineKind::Unknown
        {
            engine = EngineKind::DockerEngine;
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            && value.to_ascii_lowercase().contains("chunked")
        {
            framing = Framing::Chunked(0);
        } else if name.eq_ignore_ascii_case("content-length")
            && !matches!(framing, Framing::Chunked(_))
        {
            let length = value
                .parse()
                .map_err(|_| invalid("the answer's Content-Length is no number"))?;
            // Two lengths that differ leave the body's end unknown (RFC 9112 6.3): said
            // as that, not as a connection closed early.
            if let Framing::Length(earlier) = framing
                && earlier != length
            {
                return Err(invalid(&format!(
                    "the answer has two different Content-Length headers ({earlier} and {length})"
                )));
            }
            framing = Framing::Length(length);
        }
    }
    Ok(Head {
        status,
        framing,
        engine,
    })
}

impl Body {
    /// Appends the next bytes of the body (at most [`READ_BYTES`]) to `buffer`; 0 at its
    /// end.
    pub(crate) async fn next(&mut self, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        let wanted = match self.framing {
            Framing::Length(0) => {
                self.done = true;
                return Ok(0);
            }
            Framing::Length(left) => left.min(READ_BYTES as u64),
            Framing::Chunked(0) => {
                let size = self.chunk_size().await?;
                if size == 0 {
                    self.done = true;
                    return Ok(0);
                }
                self.framing = Framing::Chunked(size);
                size.min(READ_BYTES as u64)
            }
            Framing::Chunked(left) => left.min(READ_BYTES as u64),
            Framing::Close => READ_BYTES as u64,
        };
        let start = buffer.len();
        let read = (&mut self.reader)
            .take(wanted)
            .read_to_end_once(buffer)
            .await?;
        if read == 0 {
            if matches!(self.framing, Framing::Close) {
                self.done = true;
                return Ok(0);
            }
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the daemon closed the connection inside the answer",
            ));
        }
        debug_assert_eq!(buffer.len() - start, read);
        match &mut self.framing {
            Framing::Length(left) => *left -= read as u64,
            Framing::Chunked(left) => {
                *left -= read as u64;
                if *left == 0 {
                    // The CRLF after the chunk's data.
                    let mut end = Vec::new();
                    (&mut self.reader)
                        .take(2)
                        .read_until(b'\n', &mut end)
                        .await?;
                }
            }
            Framing::Close => {}
        }
        Ok(read)
    }

    /// The next chunk-size line (hex, extensions ignored); at 0, the trailer is read too.
    async fn chunk_size(&mut self) -> std::io::Result<u64> {
        let mut line = Vec::new();
        (&mut self.reader)
            .take(1024)
            .read_until(b'\n', &mut line)
            .await?;
        let text = String::from_utf8_lossy(&line);
        let digits = text.split(';').next().unwrap_or_default().trim();
        let size = u64::from_str_radix(digits, 16).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a chunk size that is no number",
            )
        })?;
        if size == 0 {
            loop {
                let mut trailer = Vec::new();
                let read = (&mut self.reader)
                    .take(1024)
                    .read_until(b'\n', &mut trailer)
                    .await?;
                if read == 0 || trailer.trim_ascii().is_empty() {
                    break;
                }
            }
        }
        Ok(size)
    }
}

/// One read into a `Vec`, growing it by what came.
trait ReadOnce {
    async fn read_to_end_once(&mut self, buffer: &mut Vec<u8>) -> std::io::Result<usize>;
}

impl<R: AsyncRead + Unpin> ReadOnce for R {
    async fn read_to_end_once(&mut self, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
        let start = buffer.len();
        buffer.resize(start + READ_BYTES, 0);
        let read = self.read(&mut buffer[start..]).await;
        buffer.truncate(start + *read.as_ref().unwrap_or(&0));
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn head_of(answer: &'static str) -> Head {
        let (mut daemon, envctl) = tokio::io::duplex(4096);
        daemon.write_all(answer.as_bytes()).await.unwrap();
        let connection: Box<dyn Connection> = Box::new(envctl);
        read_head(&mut BufReader::new(connection)).await.unwrap()
    }

    /// The `_ping` headers each engine sends (Docker 20.10, Podman 4.3 and 5.4, read off
    /// the CI's engines) name it; a server that names neither is unknown.
    #[tokio::test]
    async fn ping_headers_name_the_engine() {
        let docker = head_of(
            "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24+dfsg1 (linux)\r\nContent-Length: 2\r\n\r\nOK",
        )
        .await;
        assert_eq!(
            (docker.status, docker.engine),
            (200, EngineKind::DockerEngine)
        );
        let podman = head_of(
            "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nDocker-Experimental: true\r\nLibpod-Api-Version: 5.4.2\r\nServer: Libpod/5.4.2 (linux)\r\nContent-Length: 2\r\n\r\nOK",
        )
        .await;
        assert_eq!(podman.engine, EngineKind::Podman);
        let other =
            head_of("HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 2\r\n\r\nOK").await;
        assert_eq!(other.engine, EngineKind::Unknown);
    }
}
