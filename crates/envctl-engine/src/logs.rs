//! Container logs, streamed: each chunk goes to a callback with the stream it came from.
//!
//! The body is read here (`http`), not by bollard: its decoder searched a TTY container's
//! whole buffer for a newline on every read, so 20 MB without one took 15 s. Each byte is
//! now looked at once, and a TTY stream's bytes go out as they come, as `docker logs`
//! does. Liveness: without `--follow` the daemon reads a file it has, so each
//! [`LIVENESS_WINDOW`] must bring [`LIVENESS_BYTES`] or the end; with `--follow` a
//! container may rightly be quiet, so a quiet window asks the daemon for `/_ping`, and a
//! daemon that does not answer it has stopped answering.

use super::http;

use std::time::{Duration, Instant};

use super::{Engine, EngineError};
use envctl_facts::container::OutputStream;

/// The window of the liveness rule.
pub const LIVENESS_WINDOW: Duration = Duration::from_secs(5);

/// What a window must bring of a log the daemon already has.
pub const LIVENESS_BYTES: usize = 16 * 1024;

/// The multiplexed stream's frame header: stream, three zero bytes, big-endian length.
const HEADER_BYTES: usize = 8;

/// Splits the daemon's log stream into output chunks in one pass: a multiplexed stream
/// (no TTY) frame by frame, a raw one (TTY) as it comes.
#[derive(Default)]
pub(crate) struct Demultiplexer {
    /// Decided by the body's first bytes.
    raw: Option<bool>,
    /// A frame header not yet whole.
    header: Vec<u8>,
    /// The current frame's stream (none for stdin) and the bytes left of its payload.
    frame: Option<(Option<OutputStream>, usize)>,
}

impl Demultiplexer {
    /// Hands each piece of output in `bytes` to `on_chunk`.
    pub(crate) fn push(
        &mut self,
        mut bytes: &[u8],
        on_chunk: &mut impl FnMut(OutputStream, &[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let raw = *self.raw.get_or_insert_with(|| {
            // A multiplexed stream begins with a header: 0, 1 or 2, then three zeros.
            !(bytes.first().is_some_and(|first| *first <= 2)
                && bytes
                    .get(1..4)
                    .is_none_or(|zeros| zeros.iter().all(|byte| *byte == 0)))
        });
        if raw {
            return on_chunk(OutputStream::Stdout, bytes);
        }
        while !bytes.is_empty() {
            match &mut self.frame {
                Some((stream, left)) => {
                    let take = (*left).min(bytes.len());
                    if let Some(stream) = stream {
                        on_chunk(*stream, &bytes[..take])?;
                    }
                    *left -= take;
                    bytes = &bytes[take..];
                    if *left == 0 {
                        self.frame = None;
                    }
                }
                None => {
                    let take = (HEADER_BYTES - self.header.len()).min(bytes.len());
                    self.header.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if self.header.len() == HEADER_BYTES {
                        let length = u32::from_be_bytes([
                            self.header[4],
                            self.header[5],
                            self.header[6],
                            self.header[7],
                        ]) as usize;
                        let stream = match self.header[0] {
                            2 => Some(OutputStream::Stderr),
                            0 => None,
                            _ => Some(OutputStream::Stdout),
                        };
                        self.header.clear();
                        if length > 0 {
                            self.frame = Some((stream, length));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl Engine {
    /// Streams the logs of `name_or_id`; with `follow`, until the container stops.
    /// `tail` is a line count or `all`.
    pub async fn logs(
        &self,
        name_or_id: &str,
        follow: bool,
        tail: &str,
        mut on_chunk: impl FnMut(OutputStream, &[u8]) -> std::io::Result<()>,
    ) -> Result<(), EngineError> {
        let path = format!(
            "/containers/{}/logs?stdout=1&stderr=1&follow={}&tail={}",
            url::form_urlencoded::byte_serialize(name_or_id.as_bytes()).collect::<String>(),
            u8::from(follow),
            url::form_urlencoded::byte_serialize(tail.as_bytes()).collect::<String>(),
        );
        let request = format!("GET {path}");
        let mut body = self
            .get_body(&path, LIVENESS_WINDOW.min(self.timeout))
            .await?;
        let mut demultiplexer = Demultiplexer::default();
        let mut buffer = Vec::with_capacity(http::READ_BYTES);
        let mut window_start = Instant::now();
        let mut window_bytes = 0;
        loop {
            let left = LIVENESS_WINDOW.saturating_sub(window_start.elapsed());
            buffer.clear();
            match tokio::time::timeout(left, body.next(&mut buffer)).await {
                Ok(Ok(0)) => return Ok(()),
                Ok(Ok(read)) => {
                    window_bytes += read;
                    if let Err(error) = demultiplexer.push(&buffer, &mut on_chunk) {
                        // The reader went away (`envctl logs … | head`): stop quietly.
                        if error.kind() == std::io::ErrorKind::BrokenPipe {
                            return Ok(());
                        }
                        return Err(EngineError::Output { source: error });
                    }
                }
                Ok(Err(error)) => return Err(self.io_error(error)),
                Err(_) => {}
            }
            if window_start.elapsed() < LIVENESS_WINDOW {
                continue;
            }
            if window_bytes < LIVENESS_BYTES {
                let stopped = |detail: String| EngineError::StoppedAnswering {
                    endpoint: self.at(),
                    request: request.clone(),
                    detail,
                };
                if !follow {
                    return Err(stopped(format!(
                        "{window_bytes} bytes of the log in {} s",
                        LIVENESS_WINDOW.as_secs()
                    )));
                }
                // A quiet container, or a daemon gone quiet: the ping tells.
                if let Err(error) = self.ping().await {
                    return Err(stopped(format!(
                        "the stream went quiet and the daemon's ping failed: {error}"
                    )));
                }
            }
            window_start = Instant::now();
            window_bytes = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demultiplex(pieces: &[&[u8]]) -> Vec<(OutputStream, Vec<u8>)> {
        let mut demultiplexer = Demultiplexer::default();
        let mut chunks: Vec<(OutputStream, Vec<u8>)> = Vec::new();
        for piece in pieces {
            demultiplexer
                .push(piece, &mut |stream, bytes| {
                    match chunks.last_mut() {
                        Some((last, text)) if *last == stream => text.extend_from_slice(bytes),
                        _ => chunks.push((stream, bytes.to_vec())),
                    }
                    Ok(())
                })
                .unwrap();
        }
        chunks
    }

    #[test]
    fn frames_split_anywhere_keep_their_streams() {
        let mut stream = vec![1, 0, 0, 0, 0, 0, 0, 5];
        stream.extend_from_slice(b"hello");
        stream.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 3]);
        stream.extend_from_slice(b"err");
        stream.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 1]);
        stream.extend_from_slice(b"!");
        for cut in 0..stream.len() {
            let (first, second) = stream.split_at(cut);
            assert_eq!(
                demultiplex(&[first, second]),
                vec![
                    (OutputStream::Stdout, b"hello".to_vec()),
                    (OutputStream::Stderr, b"err".to_vec()),
                    (OutputStream::Stdout, b"!".to_vec()),
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_tty_stream_passes_as_it_comes() {
        assert_eq!(
            demultiplex(&[b"no newline ", b"at all"]),
            vec![(OutputStream::Stdout, b"no newline at all".to_vec())]
        );
    }

    #[test]
    fn twenty_megabytes_without_a_newline_take_linear_time() {
        let piece = vec![b'x'; http::READ_BYTES];
        let pieces: Vec<&[u8]> = std::iter::repeat_n(&piece[..], 320).collect();
        let started = Instant::now();
        let mut demultiplexer = Demultiplexer::default();
        let mut total = 0;
        for piece in pieces {
            demultiplexer
                .push(piece, &mut |_, bytes| {
                    total += bytes.len();
                    Ok(())
                })
                .unwrap();
        }
        assert_eq!(total, 320 * http::READ_BYTES);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}
