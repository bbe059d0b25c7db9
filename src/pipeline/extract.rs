//! Stage 2: extraction and chunking, on a rayon pool. Each file's bytes are hashed (identical
//! bytes are extracted once per scope: later copies become duplicates), parsed in an isolated
//! worker process, and cut into chunks; the result goes to the embed stage as an
//! [`IndexItem`].

use super::handoff::Looked;
use super::ledger::Arrival;
use super::{timed, FileMeta, Gated, IndexItem, Run, Work};
use crate::embed::Chunk;
use crate::error::Error;
use crate::index::objects::ContentRecord;
use crate::index::{CatalogEntry, EntryStatus};
use crate::report::now_secs;
use crate::report::FileStatus;
use crossbeam_channel::{Receiver, Sender};
use extractors::{ExtractInput, FileContentIndex, FileKind, IndexStatus};
use rayon::prelude::*;

/// What a chunk weighs in the in-flight budget: its text plus its locator and bookkeeping.
fn chunk_weight(chunk: &Chunk) -> u64 {
    (chunk.text.len() + chunk.context_ref.location.len() + 256) as u64
}

impl Run<'_> {
    /// Stage 2 (rayon): hash, skip unchanged, extract, chunk.
    pub(super) fn extract_stage(&self, leaves: Receiver<Work>, index: Sender<Gated>) {
        let threads = match self.ing.config.extract_threads {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        };
        let pool = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
            Ok(p) => p,
            Err(e) => return self.fail_run(Error::Pipeline(format!("thread pool: {e}"))),
        };
        /// A panic outside the parsers' sandbox (chunking, the catalog) ends the run, so
        /// that the walk stage waiting for leaves to be looked at stops waiting.
        struct FailOnPanic<'r>(&'r Run<'r>);
        impl Drop for FailOnPanic<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0
                        .fail_run(Error::Pipeline("the extraction stage panicked".into()));
                }
            }
        }
        let _guard = FailOnPanic(self);
        pool.install(|| {
            leaves.iter().par_bridge().for_each(|work| {
                let mut looked = Looked::new(&self.handoff);
                if !self.halted() {
                    self.extract_one(work, &index, &mut looked);
                }
            });
        });
    }

    pub(super) fn extract_one(&self, work: Work, index: &Sender<Gated>, looked: &mut Looked<'_>) {
        let loc = work.locator.to_string();
        let hash = blake3::hash(&work.bytes).to_hex().to_string();
        let known = self.catalog.get(&loc);
        let previous = known
            .as_ref()
            .and_then(CatalogEntry::content)
            .filter(|(h, _)| h != &hash);
        // Same bytes and tags. (Same bytes with other tags go on as a duplicate of
        // themselves: the store stage records the tags and gives them to the points.)
        if let Some(e) = known.as_ref().filter(|e| {
            e.hash.as_deref() == Some(&hash)
                && e.status == EntryStatus::Indexed
                && e.tags == work.tags
        }) {
            // Same bytes: refresh size/mtime so the next run can skip without reading.
            let mut fresh = e.clone();
            fresh.size = work.size;
            fresh.mtime_ns = work.mtime_ns;
            fresh.parent = work.parent.clone();
            let chunks = fresh.chunks;
            self.catalog.put(fresh);
            self.report(&loc, FileStatus::Unchanged, None, chunks, Some(hash));
            return;
        }
        let meta = FileMeta {
            locator: loc.clone(),
            parent: work.parent.clone(),
            hash: hash.clone(),
            size: work.size,
            mtime_ns: work.mtime_ns,
            mime: Some(work.detected.mime.clone()),
            previous,
            tags: work.tags.clone(),
        };
        // Pinned before looking: the store stage may release the last holder meanwhile, and
        // must not delete content this file is about to share.
        let arrival = self.ledger.arrive(&hash, || self.catalog.holds(&hash));
        // Pinned or claimed: a removal of its old name may go on now.
        looked.now();
        if arrival == Arrival::Share {
            // Pinned until the store stage records it.
            let _ = index.send((IndexItem::Duplicate { meta }, None));
            return;
        }
        let extracted = timed(&self.timings.extract, || {
            let input = ExtractInput {
                bytes: &work.bytes,
                locator: &work.locator,
                file_hash: &hash,
                detected: &work.detected,
                options: &self.ing.extract_options,
            };
            // Errors, panics, aborts and hangs of a parser are all this file's failure.
            self.ing.extractor.extract(&input)
        });
        let extraction = match extracted {
            Ok(x) => x,
            Err(e) => {
                let reason = e.to_string();
                self.ledger.unclaim(&hash);
                self.record_failed_content(&meta, &reason);
                let _ = index.send((IndexItem::Abandoned { hash, reason }, None));
                return;
            }
        };
        let pack = match crate::index::objects::pack(&extraction.objects) {
            Ok(p) => p,
            Err(e) => {
                let reason = e.to_string();
                self.ledger.unclaim(&hash);
                self.record_failed_content(&meta, &reason);
                let _ = index.send((IndexItem::Abandoned { hash, reason }, None));
                return;
            }
        };
        let content_index = FileContentIndex {
            id: hash.clone(),
            file_name: work.locator.file_name().to_string(),
            mime_type: work.detected.mime.clone(),
            container_path: loc.clone(),
            total_objects: u32::try_from(extraction.objects.len()).unwrap_or(u32::MAX),
            total_size: work.bytes.len() as u64,
            object_summary: extractors::summarize(&extraction.objects),
            structure: extraction.structure,
            extracted_at: now_secs(),
            status: if matches!(work.detected.kind, FileKind::Text(_)) {
                IndexStatus::Embedding
            } else {
                IndexStatus::Extracted
            },
            error: None,
        };
        let chunker = match self.ing.chunker() {
            Ok(c) => c,
            Err(e) => return self.fail_run(e),
        };
        let max_chunks = self.ing.config.chunking.max_file_chunks;
        let chunked = timed(&self.timings.chunk, || {
            chunker.chunk_file(&loc, &content_index, &extraction.objects, max_chunks)
        });
        let chunks = match chunked {
            Ok(chunks) => chunks,
            Err(too_many) => {
                // Refused before anything is embedded: a limit, like an archive's.
                let reason = too_many.to_string();
                self.ledger.unclaim(&hash);
                self.record_unindexed_content(&meta, FileStatus::Skipped, &reason);
                let _ = index.send((IndexItem::Abandoned { hash, reason }, None));
                return;
            }
        };
        // From here on the file weighs what its chunks hold, not its bytes.
        let Work { bytes, permit, .. } = work;
        drop(bytes);
        let mut permit = permit;
        permit.resize(chunks.iter().map(chunk_weight).sum::<u64>() + pack.len() as u64);
        self.stage(&meta.locator, super::FileStage::Extracted);
        let item = IndexItem::Content {
            meta,
            chunks,
            content: Box::new(ContentRecord {
                index: content_index,
                pack,
            }),
        };
        let _ = index.send((item, Some(permit)));
    }

    pub(super) fn record_failed_content(&self, meta: &FileMeta, reason: &str) {
        self.record_unindexed_content(meta, FileStatus::Failed, reason);
    }

    /// Record a file whose content was not indexed (failed, or skipped by a limit).
    pub(super) fn record_unindexed_content(
        &self,
        meta: &FileMeta,
        status: FileStatus,
        reason: &str,
    ) {
        self.catalog
            .put(meta.unindexed_entry(super::unread_status(status), reason));
        if let Some((hash, chunks)) = &meta.previous {
            if let Err(e) = self.release(hash, *chunks) {
                self.fail_run(e);
            }
        }
        self.report(
            &meta.locator,
            status,
            Some(reason.to_string()),
            0,
            Some(meta.hash.clone()),
        );
    }
}
