//! An image's CUDA libraries, read through the daemon: the archive of
//! `GET /images/{name}/get` (what `docker save` writes) streamed chunk by chunk into
//! [`envctl_core::compat::fatbin::scan_archive`] on a blocking thread, so an image of many
//! gigabytes is never held whole and a remote daemon is read as a local one (the same
//! connection as every other request).

use bytes::Bytes;
use thiserror::Error;

use super::{Engine, EngineError};
use envctl_core::compat::fatbin::{ImageScan, ImageScanError, scan_archive};

/// Chunks in flight between the daemon's stream and the scan.
const CHANNEL_CHUNKS: usize = 16;

/// How long the daemon may take before the archive's first byte: Docker writes a large
/// image's whole archive to its own disk before it answers (13 s for 2 GB here), so the
/// usual answer deadline would cut every large image. A daemon that stops answering is
/// still caught within seconds by the liveness pings beside the request.
const ARCHIVE_HEADERS_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30 * 60);

#[derive(Debug, Error)]
pub enum ImageLibrariesError {
    #[error("the daemon did not send the archive of image `{image}`")]
    Engine {
        image: String,
        #[source]
        source: EngineError,
    },
    #[error("the archive of image `{image}` could not be read")]
    Archive {
        image: String,
        #[source]
        source: ImageScanError,
    },
    /// The scan's thread panicked: a bug, said as one.
    #[error("the scan of image `{image}` crashed")]
    Crashed { image: String },
}

/// The archive's bytes as a [`std::io::Read`] on the blocking thread.
struct Chunks {
    receiver: tokio::sync::mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl std::io::Read for Chunks {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.receiver.blocking_recv() {
                Some(chunk) => self.current = chunk,
                // The stream ended (or failed: the sender says which).
                None => return Ok(0),
            }
        }
        let length = buffer.len().min(self.current.len());
        buffer[..length].copy_from_slice(&self.current.split_to(length));
        Ok(length)
    }
}

impl Engine {
    /// Every shared object with GPU code in `image` (a name or id the daemon knows), with
    /// the package each came from.
    pub async fn image_libraries(&self, image: &str) -> Result<ImageScan, ImageLibrariesError> {
        let (sender, receiver) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let scanner = tokio::task::spawn_blocking(move || {
            scan_archive(Chunks {
                receiver,
                current: Bytes::new(),
            })
        });
        // envctl's own GET (`engine::http`): bollard's request deadline would cut a long
        // archive, and this reads the body as it comes.
        let forward = async {
            let name = super::reference::image(image)?;
            let path = format!(
                "/images/{}/get",
                url::form_urlencoded::byte_serialize(name.as_bytes()).collect::<String>()
            );
            let mut body = self.get_body(&path, ARCHIVE_HEADERS_DEADLINE).await?;
            let mut buffer = Vec::with_capacity(super::http::READ_BYTES);
            loop {
                buffer.clear();
                match body.next(&mut buffer).await {
                    Ok(0) => return Ok(()),
                    Ok(_) => {
                        // The scan stopped early (damage it reports below): stop reading.
                        if sender.send(Bytes::copy_from_slice(&buffer)).await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(error) => return Err(self.io_error(error)),
                }
            }
        };
        // A long stream: no total deadline, but the liveness rule of every long stream
        // (the daemon is pinged while it is open).
        let failure = tokio::select! {
            result = forward => result.err(),
            error = self.stopped_answering("sending the image archive") => Some(error),
        };
        drop(sender);
        let scanned = scanner.await;
        // The daemon's failure first: the scan of a cut stream fails only because of it.
        if let Some(source) = failure {
            return Err(ImageLibrariesError::Engine {
                image: image.to_string(),
                source,
            });
        }
        match scanned {
            Ok(Ok(scan)) => Ok(scan),
            Ok(Err(source)) => Err(ImageLibrariesError::Archive {
                image: image.to_string(),
                source,
            }),
            Err(_) => Err(ImageLibrariesError::Crashed {
                image: image.to_string(),
            }),
        }
    }
}
