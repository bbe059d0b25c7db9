//! Stage 2: extraction and chunking, on a rayon pool. Each file's bytes are hashed (identical
//! bytes are extracted once per scope: later copies become duplicates), parsed in an isolated
//! worker process, and cut into chunks; the result goes to the embed stage as an
//! [`IndexItem`].

use super::handoff::Looked;
use super::ledger::Arrival;
use super::run::Run;
use super::{BusyTime, FileMeta, FileStage, Gated, IndexItem, Work};
use crate::embed::Chunk;
use crate::error::Error;
use crate::index::objects::ContentRecord;
use crate::index::{CatalogEntry, EntryStatus};
use crate::report::now_secs;
use crate::report::FileStatus;
use crossbeam_channel::{Receiver, Sender};
use extractors::{ExtractInput, FileContentIndex, FileKind, IndexStatus};
use rayon::prelude::*;
use std::time::Duration;

/// What a chunk weighs in the in-flight budget: its text plus its locator and bookkeeping.
fn chunk_weight(chunk: &Chunk) -> u64 {
    (chunk.text.len() + chunk.context_ref.location.len() + 256) as u64
}

/// What the extract stage did in a run.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct ExtractTally {
    /// Time in the extractors, summed over the stage's threads.
    pub(super) extract: Duration,
    /// Time chunking, summed over the stage's threads.
    pub(super) chunk: Duration,
}

/// Stage 2: takes [`Work`] (a file's bytes), answers a file whose bytes did not change,
/// extracts and chunks new content (once per content: the [`ContentLedger`] says which file
/// claims it) and hands the rest on as a duplicate; [`IndexItem`]s go on with what they
/// still hold of the byte budget.
///
/// [`ContentLedger`]: super::ledger::ContentLedger
pub(super) struct ExtractStage<'r> {
    run: &'r Run<'r>,
    /// Files extracted at once ([`crate::Config::extract_threads`]; 0 = one per core).
    threads: usize,
    extract_time: BusyTime,
    chunk_time: BusyTime,
}

impl<'r> ExtractStage<'r> {
    pub(super) fn new(run: &'r Run<'r>) -> Self {
        let threads = match run.ing.config().extract_threads {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        };
        ExtractStage {
            run,
            threads,
            extract_time: BusyTime::default(),
            chunk_time: BusyTime::default(),
        }
    }

    /// Run until `leaves` is closed (files taken after the run halted are let go unread).
    pub(super) fn run(self, leaves: Receiver<Work>, index: Sender<Gated>) -> ExtractTally {
        let pool = match rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .build()
        {
            Ok(p) => p,
            Err(e) => {
                self.run
                    .fail_run(Error::Pipeline(format!("thread pool: {e}")));
                return self.tally();
            }
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
        let _guard = FailOnPanic(self.run);
        pool.install(|| {
            leaves.iter().par_bridge().for_each(|work| {
                let mut looked = Looked::new(&self.run.handoff);
                if !self.run.halted() {
                    self.extract_one(work, &index, &mut looked);
                }
            });
        });
        self.tally()
    }

    fn tally(&self) -> ExtractTally {
        ExtractTally {
            extract: self.extract_time.total(),
            chunk: self.chunk_time.total(),
        }
    }

    fn extract_one(&self, work: Work, index: &Sender<Gated>, looked: &mut Looked<'_>) {
        let loc = work.locator.to_string();
        let hash = blake3::hash(&work.bytes).to_hex().to_string();
        let known = self.run.catalog.get(&loc);
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
            self.run.catalog.put(fresh);
            self.run
                .report(&loc, FileStatus::Unchanged, None, chunks, Some(hash));
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
        let arrival = self
            .run
            .ledger
            .arrive(&hash, || self.run.catalog.holds(&hash));
        // Pinned or claimed: a removal of its old name may go on now.
        looked.now();
        if arrival == Arrival::Share {
            // Pinned until the store stage records it.
            let _ = index.send((IndexItem::Duplicate { meta }, None));
            return;
        }
        let extracted = self.extract_time.time(|| {
            let input = ExtractInput {
                bytes: &work.bytes,
                locator: &work.locator,
                file_hash: &hash,
                detected: &work.detected,
                options: self.run.ing.extract_options(),
            };
            // Errors, panics, aborts and hangs of a parser are all this file's failure.
            self.run.ing.extractor().extract(&input)
        });
        let extraction = match extracted {
            Ok(x) => x,
            Err(e) => {
                let reason = e.to_string();
                self.run.ledger.unclaim(&hash);
                self.run.record_failed_content(&meta, &reason);
                let _ = index.send((IndexItem::Abandoned { hash, reason }, None));
                return;
            }
        };
        let pack = match crate::index::objects::pack(&extraction.objects) {
            Ok(p) => p,
            Err(e) => {
                let reason = e.to_string();
                self.run.ledger.unclaim(&hash);
                self.run.record_failed_content(&meta, &reason);
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
        let chunker = match self.run.ing.chunker() {
            Ok(c) => c,
            Err(e) => return self.run.fail_run(e),
        };
        let max_chunks = self.run.ing.config().chunking.max_file_chunks;
        let chunked = self
            .chunk_time
            .time(|| chunker.chunk_file(&loc, &content_index, &extraction.objects, max_chunks));
        let chunks = match chunked {
            Ok(chunks) => chunks,
            Err(too_many) => {
                // Refused before anything is embedded: a limit, like an archive's.
                let reason = too_many.to_string();
                self.run.ledger.unclaim(&hash);
                self.run
                    .record_unindexed_content(&meta, FileStatus::Skipped, &reason);
                let _ = index.send((IndexItem::Abandoned { hash, reason }, None));
                return;
            }
        };
        self.run
            .ing
            .progress()
            .read(work.bytes.len() as u64, chunks.len() as u64);
        // From here on the file weighs what its chunks hold, not its bytes.
        let Work { bytes, permit, .. } = work;
        drop(bytes);
        let mut permit = permit;
        permit.resize(chunks.iter().map(chunk_weight).sum::<u64>() + pack.len() as u64);
        self.run.stage(&meta.locator, FileStage::Extracted);
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
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{statuses, Bench};
    use super::super::Event;
    use super::*;
    use crossbeam_channel::{bounded, unbounded};
    use std::sync::atomic::AtomicBool;

    /// One extract stage over the files `(name, bytes)`: what it handed on, and its events.
    fn extract(b: &Bench, files: &[(&str, &[u8])]) -> (Vec<IndexItem>, Vec<Event>) {
        let stop = AtomicBool::new(false);
        let (run, events) = b.run(&stop);
        let (leaf_tx, leaf_rx) = bounded(files.len());
        let (item_tx, item_rx) = unbounded();
        for (name, bytes) in files {
            leaf_tx.send(b.work(&run, name, bytes)).unwrap();
        }
        drop(leaf_tx);
        ExtractStage::new(&run).run(leaf_rx, item_tx);
        assert!(lock_fatal(&run).is_none());
        let items = item_rx.try_iter().map(|(item, _permit)| item).collect();
        (items, events.try_iter().collect())
    }

    fn lock_fatal(run: &Run<'_>) -> Option<String> {
        crate::lock(&run.fatal).as_ref().map(|e| e.to_string())
    }

    #[test]
    fn new_bytes_are_extracted_once_and_the_same_bytes_again_are_a_duplicate() {
        let b = Bench::new();
        let same: &[u8] = b"The miller grinds the barley on Tuesdays.\n";
        let (items, events) = extract(
            &b,
            &[
                ("a.md", same),
                ("b.md", same),
                ("c.md", b"The smith shoes the horses on Fridays.\n"),
            ],
        );
        let mut contents = Vec::new();
        let mut duplicates = Vec::new();
        for item in items {
            match item {
                IndexItem::Content {
                    meta,
                    chunks,
                    content,
                } => {
                    assert!(!chunks.is_empty());
                    assert_eq!(content.index.id, meta.hash);
                    assert!(content.index.total_objects > 0);
                    contents.push(meta.locator);
                }
                IndexItem::Duplicate { meta } => duplicates.push(meta),
                _ => panic!("nothing else was sent"),
            }
        }
        assert_eq!(contents.len(), 2, "{contents:?}");
        assert_eq!(duplicates.len(), 1);
        let same_hash = blake3::hash(same).to_hex().to_string();
        assert_eq!(duplicates[0].hash, same_hash);
        let extracted = events
            .iter()
            .filter(|e| matches!(e, Event::Stage(_, super::super::FileStage::Extracted)))
            .count();
        assert_eq!(extracted, 2);
        assert!(!events.iter().any(|e| matches!(e, Event::File(_))));
    }

    #[test]
    fn a_file_that_cannot_be_extracted_fails_and_gives_up_its_claim() {
        let b = Bench::new();
        let broken: &[u8] = b"%PDF-1.7\n1 0 obj <</Type /Catalog";
        let (items, events) = extract(&b, &[("broken.pdf", broken)]);
        let hash = blake3::hash(broken).to_hex().to_string();
        assert!(
            matches!(&items[..], [IndexItem::Abandoned { hash: h, .. }] if *h == hash),
            "one abandoned claim"
        );
        let (tx, rx) = unbounded();
        events.into_iter().for_each(|e| tx.send(e).unwrap());
        assert_eq!(
            statuses(&rx),
            [("broken.pdf".to_string(), FileStatus::Failed)]
        );
        assert_eq!(b.entry_status("broken.pdf"), Some(EntryStatus::Failed));
    }

    #[test]
    fn bytes_the_catalog_holds_under_the_same_name_are_unchanged() {
        let b = Bench::new();
        let text = "The shepherd counts the flock at dusk.\n";
        b.write("a.md", text);
        assert_eq!(b.sync().summary.indexed, 1);
        let embedded_before = b.points();
        let (items, events) = extract(&b, &[("a.md", text.as_bytes())]);
        assert!(items.is_empty(), "nothing to embed");
        let (tx, rx) = unbounded();
        events.into_iter().for_each(|e| tx.send(e).unwrap());
        assert_eq!(statuses(&rx), [("a.md".to_string(), FileStatus::Unchanged)]);
        assert_eq!(b.points(), embedded_before);
    }
}
