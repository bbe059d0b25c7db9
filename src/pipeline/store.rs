//! Stage 4: the store. Upserts embedded batches, records each file in the catalog once all its
//! chunks are stored, resolves duplicates, and retires content no file holds any more
//! (re-pointing its chunks at the files that still hold the same bytes, or deleting them).

use super::ledger::Retire;
use super::{timed, FileMeta, IndexItem, Run, StoreItem};
use crate::error::Result;
use crate::index::{CatalogEntry, EntryStatus};
use crate::lock;
use crate::report::{FileReport, FileStatus};
use crossbeam_channel::{Receiver, Sender};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

/// Whether a file's new content was stored, or why not.
pub(super) enum Stored {
    Yes,
    No(String),
}

impl Run<'_> {
    /// Stage 4: upsert points, then record files and resolve duplicates.
    pub(super) fn store_stage(&self, items: Receiver<StoreItem>) {
        /// Closes the report channel when the store stage ends, even by a panic.
        struct CloseReports<'r>(&'r Mutex<Option<Sender<super::Event>>>);
        impl Drop for CloseReports<'_> {
            fn drop(&mut self) {
                lock(self.0).take();
            }
        }
        let _close = CloseReports(&self.reports);
        // Duplicates whose original is still on its way, by content hash.
        let mut waiting_dups: HashMap<String, Vec<FileMeta>> = HashMap::new();
        for item in items.iter() {
            if self.cancelled.load(Ordering::SeqCst) {
                continue;
            }
            let result = timed(&self.timings.store, || match item {
                StoreItem::Points(batch) => {
                    self.ing.store().and_then(|s| s.upsert(self.scope, &batch))
                }
                StoreItem::FileStored {
                    meta,
                    chunks,
                    content,
                } => {
                    let hash = meta.hash.clone();
                    let stored = self.file_stored(meta, chunks, &content);
                    self.ledger.unclaim(&hash);
                    let waiting = waiting_dups.remove(&hash).unwrap_or_default();
                    match stored? {
                        Stored::Yes => {
                            for dup in waiting {
                                self.duplicate_stored(dup)?;
                            }
                        }
                        Stored::No(reason) => {
                            for dup in waiting {
                                self.record_failed_content(&dup, &reason);
                            }
                        }
                    }
                    Ok(())
                }
                StoreItem::Other(IndexItem::Duplicate { meta }) => {
                    self.ledger.unpin(&meta.hash);
                    let indexed =
                        self.catalog.holds(&meta.hash) || self.ledger.is_orphaned(&meta.hash);
                    if indexed {
                        self.duplicate_stored(meta)
                    } else {
                        waiting_dups
                            .entry(meta.hash.clone())
                            .or_default()
                            .push(meta);
                        Ok(())
                    }
                }
                StoreItem::Other(IndexItem::Abandoned { hash, reason }) => {
                    for dup in waiting_dups.remove(&hash).unwrap_or_default() {
                        self.record_failed_content(&dup, &reason);
                    }
                    Ok(())
                }
                StoreItem::Other(IndexItem::Removed { locator }) => {
                    let removed = self.catalog.remove(&locator);
                    self.drop_retired_cards();
                    if let Some(e) = &removed {
                        self.send_report(
                            FileReport::new(locator.clone(), FileStatus::Removed)
                                .hash(e.hash.clone())
                                .archive(e.status == EntryStatus::Container),
                        );
                    }
                    match removed.as_ref().and_then(CatalogEntry::content) {
                        Some((h, chunks)) => self.release(&h, chunks),
                        None => Ok(()),
                    }
                }
                StoreItem::Other(IndexItem::Content { .. }) => Ok(()),
            });
            if let Err(e) = result {
                self.fail_run(e);
            }
            self.checkpoint();
        }
        for (_, dups) in waiting_dups {
            for dup in dups {
                self.record_failed_content(
                    &dup,
                    "identical content elsewhere in this run was not indexed",
                );
            }
        }
    }

    pub(super) fn put_indexed(&self, meta: &FileMeta, chunks: u32) {
        self.catalog.put(meta.indexed_entry(chunks));
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
            self.catalog
                .write_content_and_put(&meta.hash, content, meta.indexed_entry(chunks));
        if let Err(e) = written {
            let reason = format!("its content index could not be written: {e}");
            tracing::warn!("{}: {reason}", meta.locator);
            // No file holds the content: it was claimed because no file and no orphan held it
            // (an orphan is shared, not claimed), and files of the run with the same bytes
            // wait for it (the store stage fails them too). Its points go.
            self.delete_content(&meta.hash)?;
            self.record_failed_content(&meta, &reason);
            return Ok(Stored::No(reason));
        }
        if let Some((hash, old_chunks)) = &meta.previous {
            self.release(hash, *old_chunks)?;
        }
        self.drop_retired_cards();
        self.report(
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
        let (chunks, original) = self.catalog.held_elsewhere(&meta.hash, &meta.locator);
        // Adopt an orphaned content (the file that held it moved or changed in this run).
        let adopted = self.ledger.adopt(&meta.hash);
        let chunks = chunks.or(adopted).unwrap_or(0);
        self.put_indexed(&meta, chunks);
        let all = self.catalog.holders(&meta.hash);
        if chunks > 0 {
            self.ing
                .store()?
                .set_holders(self.scope, &meta.hash, &all)?;
        }
        if let Some((hash, old_chunks)) = &meta.previous {
            self.release(hash, *old_chunks)?;
        }
        self.drop_retired_cards();
        // Another file holds the same bytes (else it adopted content a moved file left).
        let status = if original.is_some() {
            FileStatus::Duplicate
        } else {
            FileStatus::Indexed
        };
        self.report(
            &meta.locator,
            status,
            original.map(|o| format!("of {o}")),
            chunks,
            Some(meta.hash),
        );
        Ok(())
    }

    /// A file stopped holding content `hash` (already changed in the catalog): re-point the
    /// content's chunks at the files that still hold it; delete them when none does, unless a
    /// file in flight is about to adopt them.
    pub(super) fn release(&self, hash: &str, chunks: u32) -> Result<()> {
        let remaining = self.catalog.holders(hash);
        if !remaining.locators.is_empty() {
            return self.ing.store()?.set_holders(self.scope, hash, &remaining);
        }
        match self.ledger.retire(hash, chunks) {
            Retire::Keep => Ok(()),
            Retire::Delete => self.delete_content(hash),
        }
    }

    /// Delete content `hash` of this scope: its points, and its content index unless another
    /// scope holds the same bytes. Every deletion of a content in a run goes through here.
    pub(super) fn delete_content(&self, hash: &str) -> Result<()> {
        self.ing.store()?.delete_content(self.scope, hash)?;
        if let Err(e) = self.catalog.drop_content_index(hash) {
            tracing::warn!("content index of {hash}: {e}");
        }
        Ok(())
    }

    /// Delete the points of contents that no file holds at the end of the run.
    pub(super) fn delete_orphans(&self) -> Result<()> {
        for hash in self.ledger.take_orphans() {
            if !self.catalog.holds(&hash) {
                self.delete_content(&hash)?;
            }
        }
        Ok(())
    }
}
