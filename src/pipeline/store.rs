//! Stage 4: the store. Upserts embedded batches, records each file in the catalog once all its
//! chunks are stored, resolves duplicates, and retires content no file holds any more
//! (re-pointing its chunks at the files that still hold the same bytes, or deleting them).

use super::run::Run;
use super::{entry_cards, Event, FileMeta, IndexItem, StoreItem};
use crate::error::Result;
use crate::index::{CatalogEntry, EntryStatus};
use crate::lock;
use crate::report::{FileReport, FileStatus};
use crossbeam_channel::{Receiver, Sender};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Whether a file's new content was stored, or why not.
pub(super) enum Stored {
    Yes,
    No(String),
}

/// What the store stage did in a run.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct StoreTally {
    /// Time spent storing and recording.
    pub(super) busy: Duration,
}

/// Stage 4, the last: takes [`StoreItem`]s, upserts the batches, records each file in the
/// catalog once all its chunks are stored (and its duplicates once their original is),
/// removes what is gone, and checkpoints the catalog. It closes the report channel when it
/// ends, which ends the caller's report loop.
pub(super) struct StoreStage<'r> {
    run: &'r Run<'r>,
    /// Duplicates whose original is still on its way, by content hash.
    waiting_dups: HashMap<String, Vec<FileMeta>>,
    /// Contents with points upserted whose file is not stored yet: a stopped run deletes
    /// them (their vectors are checkpointed for the next run, `resume`).
    unfinished: std::collections::HashSet<String>,
    /// Save the catalog at most this often ([`crate::Config::checkpoint_interval`]).
    checkpoint_every: Duration,
    /// When the catalog was last checkpointed, and how long that took.
    saved_at: (Instant, Duration),
    tally: StoreTally,
}

impl<'r> StoreStage<'r> {
    pub(super) fn new(run: &'r Run<'r>) -> Self {
        StoreStage {
            run,
            waiting_dups: HashMap::new(),
            unfinished: std::collections::HashSet::new(),
            checkpoint_every: run.ing.config().checkpoint_interval,
            saved_at: (Instant::now(), Duration::ZERO),
            tally: StoreTally::default(),
        }
    }

    /// Run until `items` is closed.
    pub(super) fn run(mut self, items: Receiver<StoreItem>) -> StoreTally {
        /// Closes the report channel when the store stage ends, even by a panic.
        struct CloseReports<'r>(&'r Mutex<Option<Sender<Event>>>);
        impl Drop for CloseReports<'_> {
            fn drop(&mut self) {
                lock(self.0).take();
            }
        }
        let _close = CloseReports(&self.run.reports);
        for item in items.iter() {
            if self.run.failed() {
                continue;
            }
            let started = Instant::now();
            let result = self.take(item);
            self.tally.busy += started.elapsed();
            if let Err(e) = result {
                self.run.fail_run(e);
            }
            self.checkpoint();
        }
        // A file the run stopped in the middle of: its points so far go (the index never
        // holds a file by halves), unless another file holds the same content.
        for hash in std::mem::take(&mut self.unfinished) {
            if !self.run.catalog.holds(&hash) {
                let deleted = self
                    .run
                    .ing
                    .store()
                    .and_then(|s| s.delete_content(self.run.scope, &hash));
                if let Err(e) = deleted {
                    tracing::warn!("points of an unfinished file: {e}");
                }
            }
        }
        for (_, dups) in std::mem::take(&mut self.waiting_dups) {
            for dup in dups {
                self.run.record_failed_content(
                    &dup,
                    "identical content elsewhere in this run was not indexed",
                );
            }
        }
        self.tally
    }

    /// Store one item.
    fn take(&mut self, item: StoreItem) -> Result<()> {
        let run = self.run;
        match item {
            StoreItem::Points(batch) => {
                self.unfinished
                    .extend(batch.iter().map(|c| c.content_hash.clone()));
                run.ing.store().and_then(|s| s.upsert(run.scope, &batch))
            }
            StoreItem::FileStored {
                meta,
                chunks,
                content,
            } => {
                let hash = meta.hash.clone();
                self.unfinished.remove(&hash);
                let stored = self.file_stored(meta, chunks, &content);
                run.ledger.unclaim(&hash);
                let waiting = self.waiting_dups.remove(&hash).unwrap_or_default();
                match stored? {
                    Stored::Yes => {
                        for dup in waiting {
                            self.duplicate_stored(dup)?;
                        }
                    }
                    Stored::No(reason) => {
                        for dup in waiting {
                            run.record_failed_content(&dup, &reason);
                        }
                    }
                }
                Ok(())
            }
            StoreItem::Other(IndexItem::Duplicate { meta }) => {
                run.ledger.unpin(&meta.hash);
                let indexed = run.catalog.holds(&meta.hash) || run.ledger.is_orphaned(&meta.hash);
                if indexed {
                    self.duplicate_stored(meta)
                } else {
                    self.waiting_dups
                        .entry(meta.hash.clone())
                        .or_default()
                        .push(meta);
                    Ok(())
                }
            }
            StoreItem::Other(IndexItem::Abandoned { hash, reason }) => {
                for dup in self.waiting_dups.remove(&hash).unwrap_or_default() {
                    run.record_failed_content(&dup, &reason);
                }
                Ok(())
            }
            StoreItem::Other(IndexItem::Removed { locator }) => {
                let removed = run.catalog.remove(&locator);
                run.drop_retired_cards();
                if let Some(e) = &removed {
                    run.send_report(
                        FileReport::new(locator.clone(), FileStatus::Removed)
                            .hash(e.hash.clone())
                            .archive(e.status == EntryStatus::Container),
                    );
                }
                match removed.as_ref().and_then(CatalogEntry::content) {
                    Some((h, chunks)) => run.release(&h, chunks),
                    None => Ok(()),
                }
            }
            StoreItem::Other(IndexItem::Content { .. }) => Ok(()),
        }
    }

    /// Save the catalog now and then during a long run, so a crash loses little work (what
    /// the saved catalog and the store disagree on is repaired at the next start). Every
    /// `checkpoint_interval` (2 s), or less often for a catalog so large that saving it would
    /// take over 5 % of the run; after every item when the interval is zero. Each checkpoint
    /// first stores the cards the entries changed since want ([`entry_cards`]), so a run fed
    /// for days (an upload queue) does not keep them waiting.
    fn checkpoint(&mut self) {
        const COST_SHARE: u32 = 20;
        let every = self.checkpoint_every;
        let (at, cost) = self.saved_at;
        if every.is_zero() || at.elapsed() >= every.max(cost * COST_SHARE) {
            if !self.run.halted() {
                self.run.write_entry_cards(entry_cards::Pass::Checkpoint);
            }
            let started = Instant::now();
            if let Err(e) = self.run.catalog.save() {
                tracing::warn!("catalog checkpoint: {e}");
            }
            self.saved_at = (Instant::now(), started.elapsed());
        }
    }

    pub(super) fn put_indexed(&self, meta: &FileMeta, chunks: u32) {
        self.run.catalog.put(meta.indexed_entry(chunks));
    }

    /// All chunks of a new content are stored: write its content index, record the file,
    /// retire what it replaced. The index is written and the file recorded under one catalog
    /// lock: a run of another scope deleting the content indexes nobody holds (they are
    /// shared by identical bytes) sees this one held. When the content index cannot be
    /// written, the file fails (its points are deleted): an indexed file always has its
    /// content files, which the read tools need.
    pub(super) fn file_stored(
        &self,
        meta: FileMeta,
        chunks: u32,
        content: &crate::index::objects::ContentRecord,
    ) -> Result<Stored> {
        let written =
            self.run
                .catalog
                .write_content_and_put(&meta.hash, content, meta.indexed_entry(chunks));
        if let Err(e) = written {
            let reason = format!("its content index could not be written: {e}");
            tracing::warn!("{}: {reason}", meta.locator);
            // No file holds the content: it was claimed because no file and no orphan held it
            // (an orphan is shared, not claimed), and files of the run with the same bytes
            // wait for it (the store stage fails them too). Its points go.
            self.run.delete_content(&meta.hash)?;
            self.run.record_failed_content(&meta, &reason);
            return Ok(Stored::No(reason));
        }
        if let Some((hash, old_chunks)) = &meta.previous {
            self.run.release(hash, *old_chunks)?;
        }
        self.run.drop_retired_cards();
        self.run.report(
            &meta.locator,
            FileStatus::Indexed,
            None,
            chunks,
            Some(meta.hash),
        );
        Ok(Stored::Yes)
    }

    /// A file whose bytes are already indexed under another locator: add it to their locators.
    pub(super) fn duplicate_stored(&self, meta: FileMeta) -> Result<()> {
        // The original is not itself (when only its tags changed, it is).
        let (chunks, original) = self.run.catalog.held_elsewhere(&meta.hash, &meta.locator);
        // Adopt an orphaned content (the file that held it moved or changed in this run).
        let adopted = self.run.ledger.adopt(&meta.hash);
        let chunks = chunks.or(adopted).unwrap_or(0);
        self.put_indexed(&meta, chunks);
        let all = self.run.catalog.holders(&meta.hash);
        if chunks > 0 {
            self.run
                .ing
                .store()?
                .set_holders(self.run.scope, &meta.hash, &all)?;
        }
        if let Some((hash, old_chunks)) = &meta.previous {
            self.run.release(hash, *old_chunks)?;
        }
        self.run.drop_retired_cards();
        // Another file holds the same bytes (else it adopted content a moved file left).
        let status = if original.is_some() {
            FileStatus::Duplicate
        } else {
            FileStatus::Indexed
        };
        self.run.report(
            &meta.locator,
            status,
            original.map(|o| format!("of {o}")),
            chunks,
            Some(meta.hash),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{lines, statuses, Bench};
    use super::*;
    use crate::embed::fake::FakeEmbedder;
    use crate::embed::Embedder;
    use crate::index::StoredChunk;
    use crossbeam_channel::unbounded;
    use std::sync::atomic::AtomicBool;

    /// What the embed stage hands on for new file `name` holding `text`: its chunks with
    /// vectors, then "all its chunks are stored".
    fn embedded(b: &Bench, name: &str, text: &str) -> Vec<StoreItem> {
        let IndexItem::Content {
            meta,
            chunks,
            content,
        } = b.content(name, text)
        else {
            unreachable!("Bench::content makes content")
        };
        let model = FakeEmbedder::default();
        let stored: Vec<StoredChunk> = chunks
            .into_iter()
            .map(|chunk| StoredChunk {
                vector: model.embed(&[&chunk.embedding_text()]).unwrap().remove(0),
                multilingual: None,
                other_language: false,
                chunk,
                content_hash: meta.hash.clone(),
                locators: vec![meta.locator.clone()],
                tags: Vec::new(),
            })
            .collect();
        let n = stored.len() as u32;
        vec![
            StoreItem::Points(stored),
            StoreItem::FileStored {
                meta,
                chunks: n,
                content,
            },
        ]
    }

    /// One store stage over `items`, to its end; its lines and whether it failed the run.
    fn store(b: &Bench, items: Vec<StoreItem>) -> (Vec<(String, FileStatus)>, Option<String>) {
        let stop = AtomicBool::new(false);
        let (run, events) = b.run(&stop);
        let (tx, rx) = unbounded();
        for item in items {
            tx.send(item).unwrap();
        }
        drop(tx);
        StoreStage::new(&run).run(rx);
        assert!(lock(&run.reports).is_none(), "the report channel is closed");
        let fatal = lock(&run.fatal).take().map(|e| e.to_string());
        (statuses(&events), fatal)
    }

    const TEXT: &str = "The ferryman crosses at the turn of the tide.\n";

    #[test]
    fn a_file_is_recorded_once_its_chunks_are_stored_and_removed_with_them() {
        let b = Bench::new();
        let items = embedded(&b, "a.md", TEXT);
        let StoreItem::Points(batch) = &items[0] else {
            unreachable!()
        };
        let n = batch.len();
        assert!(n >= 1);
        let (lines, fatal) = store(&b, items);
        assert_eq!(fatal, None);
        assert_eq!(lines, [("a.md".to_string(), FileStatus::Indexed)]);
        assert_eq!(b.entry_status("a.md"), Some(EntryStatus::Indexed));
        assert_eq!(b.points(), n);
        let hash = blake3::hash(TEXT.as_bytes()).to_hex().to_string();
        assert!(b.ing.catalog().content_index(&hash).unwrap().is_some());

        let removed = IndexItem::Removed {
            locator: b.locator("a.md").to_string(),
        };
        let (lines, fatal) = store(&b, vec![StoreItem::Other(removed)]);
        assert_eq!(fatal, None);
        assert_eq!(lines, [("a.md".to_string(), FileStatus::Removed)]);
        assert_eq!(b.entry_status("a.md"), None);
        assert_eq!(b.points(), 0, "no file holds the content: its points go");
        assert!(b.ing.catalog().content_index(&hash).unwrap().is_none());
    }

    #[test]
    fn a_duplicate_waits_for_its_original_and_shares_its_points() {
        let b = Bench::new();
        let mut items = vec![StoreItem::Other(IndexItem::Duplicate {
            meta: b.meta("b.md", TEXT.as_bytes()),
        })];
        items.extend(embedded(&b, "a.md", TEXT));
        let n = match &items[1] {
            StoreItem::Points(batch) => batch.len(),
            _ => unreachable!(),
        };
        let (lines, fatal) = store(&b, items);
        assert_eq!(fatal, None);
        assert_eq!(
            lines,
            [
                ("a.md".to_string(), FileStatus::Indexed),
                ("b.md".to_string(), FileStatus::Duplicate)
            ]
        );
        assert_eq!(b.entry_status("b.md"), Some(EntryStatus::Indexed));
        assert_eq!(b.points(), n, "embedded once for both names");
    }

    #[test]
    fn a_duplicate_fails_with_its_abandoned_original_or_when_it_never_comes() {
        let b = Bench::new();
        let dup = |name: &str, text: &str| {
            StoreItem::Other(IndexItem::Duplicate {
                meta: b.meta(name, text.as_bytes()),
            })
        };
        let abandoned = IndexItem::Abandoned {
            hash: blake3::hash(TEXT.as_bytes()).to_hex().to_string(),
            reason: "the parser gave up".into(),
        };
        let items = vec![
            dup("b.md", TEXT),
            StoreItem::Other(abandoned),
            dup("c.md", "Bytes whose original never arrives.\n"),
        ];
        let stop = AtomicBool::new(false);
        let (run, events) = b.run(&stop);
        let (tx, rx) = unbounded();
        items.into_iter().for_each(|i| tx.send(i).unwrap());
        drop(tx);
        StoreStage::new(&run).run(rx);
        let lines = lines(&events);
        let reasons: Vec<(String, FileStatus, String)> = lines
            .into_iter()
            .map(|(n, s, r)| (n, s, r.reason.unwrap_or_default()))
            .collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert_eq!(
            reasons[0],
            (
                "b.md".to_string(),
                FileStatus::Failed,
                "the parser gave up".to_string()
            )
        );
        assert_eq!(reasons[1].0, "c.md");
        assert_eq!(reasons[1].1, FileStatus::Failed);
        assert!(reasons[1].2.contains("not indexed"), "{reasons:?}");
        assert_eq!(b.entry_status("b.md"), Some(EntryStatus::Failed));
        assert_eq!(b.entry_status("c.md"), Some(EntryStatus::Failed));
        // No content was stored: the only points are the failed entries' own cards.
        let points = b.ing.store().unwrap().point_records().unwrap();
        assert!(
            points.iter().all(|p| p.content_hash.starts_with("entry-")),
            "{:?}",
            points.iter().map(|p| &p.content_hash).collect::<Vec<_>>()
        );
    }
}
