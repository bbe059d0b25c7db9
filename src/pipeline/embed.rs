//! Stage 3: embedding. Chunks of several files are batched together (the model is fastest on
//! full batches); a file is complete once the batch holding its last chunk is embedded, and
//! only then does the store stage record it.

use super::{timed, FileMeta, IndexItem, Run, StoreItem};
use crate::index::objects::ContentRecord;
use crate::index::StoredChunk;
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::Ordering;

/// A file whose chunks are in the batcher, with its content index.
type Waiting = (FileMeta, Box<ContentRecord>);

impl Run<'_> {
    /// Stage 3: embed chunks in batches across files.
    pub(super) fn embed_stage(&self, items: Receiver<IndexItem>, store: Sender<StoreItem>) {
        use crate::batcher::Batcher;
        let batch_size = self.ing.config.embed_batch;
        // A file waits in the batcher with its content index, written by the store stage.
        let mut batcher: Batcher<StoredChunk, Waiting> = Batcher::new(batch_size);

        // Embed and send every ready batch, then the files they completed; false once the
        // run cannot go on.
        let flush = |batcher: &mut Batcher<StoredChunk, Waiting>, all: bool| -> bool {
            while let Some(mut batch) = batcher.next_batch(all) {
                let embedder = match self.ing.embedder() {
                    Ok(e) => e,
                    Err(e) => {
                        self.fail_run(e);
                        return false;
                    }
                };
                let texts: Vec<&str> = batch.iter().map(|c| c.chunk.text.as_str()).collect();
                let vectors = timed(&self.timings.embed, || embedder.embed(&texts));
                match vectors {
                    Ok(vs) => {
                        self.embedded.fetch_add(vs.len() as u64, Ordering::Relaxed);
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
        };

        for item in items.iter() {
            if self.cancelled.load(Ordering::SeqCst) {
                continue; // drain, so senders never block forever
            }
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
                        })
                        .collect();
                    batcher.push((meta, content), stored);
                    if !flush(&mut batcher, false) {
                        return;
                    }
                }
                other => {
                    if store.send(StoreItem::Other(other)).is_err() {
                        return;
                    }
                }
            }
        }
        if !self.cancelled.load(Ordering::SeqCst) {
            flush(&mut batcher, true);
        }
    }
}
