//! The async face of [`Uploads`], for the service: every call that may touch the disk or
//! wait for a lock runs on tokio's blocking pool, so no executor thread ever blocks. A body
//! comes as a stream of chunks and reaches the spool through a small bounded channel: a slow
//! disk slows the sender down, memory stays at a few chunks.

use std::sync::Arc;
use std::time::Duration;

use extractors::Scope;
use futures_util::{Stream, StreamExt};

use ingest::{FileState, JobId, JobStatus, Reservation, UploadOptions, Uploads};
use ingest_base::error::{Error, Result};

/// Chunks of a body waiting for the spool.
const CHANNEL_CHUNKS: usize = 4;

/// Bytes of a refused body still read (and dropped) after the refusal, so that an HTTP
/// client still sending can read the answer instead of a broken pipe; a longer body is cut.
pub(crate) const DRAIN_BYTES: u64 = 16 << 20;

/// How long a refused body is drained at most: a slow client gets its answer this late, no
/// later (and its connection is closed after it).
pub(crate) const DRAIN_TIME: Duration = Duration::from_secs(2);

/// Read and drop what is left of `body`, up to [`DRAIN_BYTES`] and for at most
/// [`DRAIN_TIME`].
pub(crate) async fn drain<S, B, E>(body: S)
where
    S: Stream<Item = std::result::Result<B, E>>,
    B: AsRef<[u8]>,
{
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        let mut body = std::pin::pin!(body);
        let mut read = 0u64;
        while read < DRAIN_BYTES {
            match body.next().await {
                Some(Ok(chunk)) => read += chunk.as_ref().len() as u64,
                _ => return,
            }
        }
    })
    .await;
}

/// [`Uploads`] for async code. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AsyncUploads(Arc<Uploads>);

/// Reads what the async side sends, blocking the (blocking-pool) thread between chunks.
struct ChannelReader<B> {
    chunks: tokio::sync::mpsc::Receiver<std::result::Result<B, std::io::Error>>,
    current: Option<B>,
    at: usize,
}

impl<B: AsRef<[u8]>> std::io::Read for ChannelReader<B> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if let Some(chunk) = &self.current {
                let rest = chunk.as_ref().get(self.at..).unwrap_or_default();
                if !rest.is_empty() {
                    let n = rest.len().min(buf.len());
                    buf.get_mut(..n)
                        .unwrap_or_default()
                        .copy_from_slice(rest.get(..n).unwrap_or_default());
                    self.at += n;
                    return Ok(n);
                }
            }
            match self.chunks.blocking_recv() {
                None => return Ok(0),
                Some(Ok(chunk)) => {
                    self.current = Some(chunk);
                    self.at = 0;
                }
                // The stream's own error, its sources kept (a `BodyCut` is answered by kind).
                Some(Err(e)) => return Err(e),
            }
        }
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Upload(format!("the upload task stopped: {e}")))
}

impl AsyncUploads {
    /// Wrap a started queue.
    pub fn new(uploads: Arc<Uploads>) -> Self {
        AsyncUploads(uploads)
    }

    /// The queue itself (its blocking calls).
    pub fn blocking(&self) -> &Arc<Uploads> {
        &self.0
    }

    /// [`Uploads::submit`] with the body as a stream of chunks.
    pub async fn submit<S, B, E>(
        &self,
        name: String,
        body: S,
        scope: Scope,
        options: UploadOptions,
    ) -> Result<JobId>
    where
        S: Stream<Item = std::result::Result<B, E>> + Send,
        B: AsRef<[u8]> + Send + 'static,
        E: std::fmt::Display,
    {
        let reservation = self.reserve(scope).await?;
        // A stream error known only by its words is answered as such (no kind to act on).
        let body = body.map(|chunk| chunk.map_err(|e| std::io::Error::other(e.to_string())));
        self.submit_reserved(reservation, name, body, options).await
    }

    /// [`Uploads::reserve`]: a place to receive one upload, before its body is read.
    pub async fn reserve(&self, scope: Scope) -> Result<Reservation> {
        let uploads = Arc::clone(&self.0);
        blocking(move || uploads.reserve(&scope)).await?
    }

    /// [`Uploads::submit_reserved`] with the body as a stream of chunks.
    pub async fn submit_reserved<S, B, E>(
        &self,
        reservation: Reservation,
        name: String,
        body: S,
        options: UploadOptions,
    ) -> Result<JobId>
    where
        S: Stream<Item = std::result::Result<B, E>> + Send,
        B: AsRef<[u8]> + Send + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (tx, rx) = tokio::sync::mpsc::channel(CHANNEL_CHUNKS);
        let uploads = Arc::clone(&self.0);
        let spooling = tokio::task::spawn_blocking(move || {
            let reader = ChannelReader {
                chunks: rx,
                current: None,
                at: 0,
            };
            uploads.submit_reserved(reservation, &name, reader, &options)
        });
        let mut body = std::pin::pin!(body);
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(std::io::Error::other);
            let failed = chunk.is_err();
            // Fails once the spool gave up (too large): its error is the answer.
            if tx.send(chunk).await.is_err() {
                drain(body).await;
                break;
            }
            if failed {
                break;
            }
        }
        drop(tx);
        spooling
            .await
            .map_err(|e| Error::Upload(format!("the upload task stopped: {e}")))?
    }

    /// [`Uploads::job`].
    pub async fn job(&self, id: JobId, scope: Scope) -> Option<JobStatus> {
        let uploads = Arc::clone(&self.0);
        blocking(move || uploads.job(&id, &scope))
            .await
            .ok()
            .flatten()
    }

    /// [`Uploads::wait`].
    pub async fn wait(&self, id: JobId, scope: Scope, timeout: Duration) -> Option<JobStatus> {
        let uploads = Arc::clone(&self.0);
        blocking(move || uploads.wait(&id, &scope, timeout))
            .await
            .ok()
            .flatten()
    }

    /// [`Uploads::file_status`].
    pub async fn file_status(&self, locator: String, scope: Scope) -> Option<FileState> {
        let uploads = Arc::clone(&self.0);
        blocking(move || uploads.file_status(&locator, &scope))
            .await
            .ok()
            .flatten()
    }

    /// [`Uploads::delete`].
    pub async fn delete(&self, locator: String, scope: Scope) -> Result<JobId> {
        let uploads = Arc::clone(&self.0);
        blocking(move || uploads.delete(&locator, &scope)).await?
    }

    /// [`Uploads::metrics`].
    pub async fn metrics(&self) -> String {
        let uploads = Arc::clone(&self.0);
        blocking(move || uploads.metrics())
            .await
            .unwrap_or_default()
    }

    /// [`Uploads::shutdown`].
    pub async fn shutdown(&self) {
        let uploads = Arc::clone(&self.0);
        let _ = blocking(move || uploads.shutdown()).await;
    }
}
