//! Stage 3: embedding. Chunks of several files are batched together (the model is fastest on
//! full batches); a file is complete once the batch holding its last chunk is embedded, and
//! only then does the store stage record it.
//!
//! Fairness: the stage embeds one batch at a time and takes the files that arrived meanwhile
//! before the next, and batches are drawn round-robin from every waiting file
//! ([`crate::batcher`]), so the small files behind a 10 000-chunk file are indexed within a
//! batch or two instead of after it. Length: each batch holds [`LENGTH_BUCKETS`] model runs,
//! which the embedder fills with chunks of similar length (a run is padded to its longest).

use super::{timed, FileMeta, IndexItem, Run, StoreItem};
use crate::batcher::Batcher;
use crate::index::objects::ContentRecord;
use crate::index::StoredChunk;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Model runs per embedding call: the embedder sorts a call's chunks by length, so the more
/// runs a call holds, the less padding (4 × 16 chunks keeps a file's wait short).
pub(crate) const LENGTH_BUCKETS: usize = 4;

/// How long chunks short of a full batch wait for more files before they are embedded as
/// they are (the model would idle otherwise).
const PARTIAL_WAIT: Duration = Duration::from_millis(100);

/// A file whose chunks are in the batcher, with its content index.
type Waiting = (FileMeta, Box<ContentRecord>);

impl Run<'_> {
    /// Stage 3: embed chunks in batches across files.
    pub(super) fn embed_stage(&self, items: Receiver<IndexItem>, store: Sender<StoreItem>) {
        let batch_size = self.ing.config.embed_batch.max(1) * LENGTH_BUCKETS;
        // Files taken while a full batch waits: beyond this the stage embeds before taking
        // more (the chunks in the batcher are outside the in-flight byte budget).
        let max_waiting = self.ing.config.channel_capacity.max(1);
        let mut batcher: Batcher<StoredChunk, Waiting> = Batcher::new(batch_size);
        let mut input_open = true;
        loop {
            if self.cancelled.load(Ordering::SeqCst) {
                for _ in items.iter() {} // drain, so senders never block forever
                return;
            }
            // Take the files that are ready; wait for one only when no full batch is, and
            // for at most PARTIAL_WAIT while chunks are waiting: a run fed by an upload
            // queue may get no next file for hours.
            let mut quiet = false;
            while input_open {
                let full = batcher.has_batch();
                if full && batcher.files_waiting() >= max_waiting {
                    break;
                }
                let item = if full {
                    match items.try_recv() {
                        Ok(item) => item,
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            input_open = false;
                            break;
                        }
                    }
                } else if batcher.is_empty() {
                    match items.recv() {
                        Ok(item) => item,
                        Err(_) => {
                            input_open = false;
                            break;
                        }
                    }
                } else {
                    match items.recv_timeout(PARTIAL_WAIT) {
                        Ok(item) => item,
                        Err(RecvTimeoutError::Timeout) => {
                            quiet = true;
                            break;
                        }
                        Err(RecvTimeoutError::Disconnected) => {
                            input_open = false;
                            break;
                        }
                    }
                };
                if !self.take(item, &mut batcher, &store) {
                    return;
                }
            }
            if !self.embed_next(&mut batcher, !input_open || quiet, &store) {
                return;
            }
            if !input_open && batcher.is_empty() {
                return;
            }
        }
    }

    /// Queue a file's chunks, or pass on an item that has nothing to embed. False once the
    /// store stage is gone.
    fn take(
        &self,
        item: IndexItem,
        batcher: &mut Batcher<StoredChunk, Waiting>,
        store: &Sender<StoreItem>,
    ) -> bool {
        match item {
            IndexItem::Content {
                meta,
                chunks,
                content,
            } => {
                let stored: Vec<StoredChunk> = chunks
                    .into_iter()
                    .map(|chunk| StoredChunk {
                        chunk,
                        vector: Vec::new(),
                        content_hash: meta.hash.clone(),
                        locators: vec![meta.locator.clone()],
                        tags: meta.tags.clone(),
                    })
                    .collect();
                self.stage(&meta.locator, super::FileStage::Embedding);
                batcher.push((meta, content), stored);
                true
            }
            other => store.send(StoreItem::Other(other)).is_ok(),
        }
    }

    /// Embed and send the next batch if one is ready (with `all`, whatever is left), then the
    /// files that are complete. False once the run cannot go on.
    fn embed_next(
        &self,
        batcher: &mut Batcher<StoredChunk, Waiting>,
        all: bool,
        store: &Sender<StoreItem>,
    ) -> bool {
        if let Some(mut batch) = batcher.next_batch(all) {
            let embedder = match self.ing.embedder() {
                Ok(e) => e,
                Err(e) => {
                    self.fail_run(e);
                    return false;
                }
            };
            let owned: Vec<_> = batch.iter().map(|c| c.chunk.embedding_text()).collect();
            let texts: Vec<&str> = owned.iter().map(|t| t.as_ref()).collect();
            match timed(&self.timings.embed, || embedder.embed(&texts)) {
                Ok(vs) => {
                    self.embedded.fetch_add(vs.len() as u64, Ordering::Relaxed);
                    let tokens: usize = batch.iter().map(|c| c.chunk.tokens).sum();
                    self.embedded_tokens
                        .fetch_add(tokens as u64, Ordering::Relaxed);
                    for (c, v) in batch.iter_mut().zip(vs) {
                        c.vector = v;
                    }
                }
                Err(e) => {
                    self.fail_run(e);
                    return false;
                }
            }
            if store.send(StoreItem::Points(batch)).is_err() {
                return false;
            }
        }
        for ((meta, content), n) in batcher.completed() {
            let chunks = u32::try_from(n).unwrap_or(u32::MAX);
            let stored = StoreItem::FileStored {
                meta,
                chunks,
                content,
            };
            if store.send(stored).is_err() {
                return false;
            }
        }
        true
    }
}
