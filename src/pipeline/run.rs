//! The state the stages of one run share, and what any stage may do with it: send a ledger
//! line (which may complete an input), record a file that was not indexed, release a content
//! a file stopped holding, fail or halt the run.

use super::books::ScopeCatalog;
use super::entry_cards;
use super::handoff::LeafHandoff;
use super::inputs::InputTracker;
use super::ledger::{ContentLedger, Retire};
use super::{Event, FileMeta, FileStage, IndexItem};
use crate::error::{Error, Result};
use crate::gate::ByteGate;
use crate::index::CatalogEntry;
use crate::lock;
use crate::report::{FileReport, FileStatus};
use crate::services::Services;
use crossbeam_channel::Sender;
use extractors::Scope;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// What the stages of one run share: the scope's catalog view, the content ledger, the input
/// tracker, the leaf handoff, the byte gate, the report channel and whether the run halted.
/// Each stage owns the rest of its state ([`super::walk::WalkStage`],
/// [`super::extract::ExtractStage`], [`super::embed::EmbedStage`], [`super::store::StoreStage`]).
pub(super) struct Run<'a> {
    pub(super) ing: &'a Services,
    pub(super) scope: &'a Scope,
    /// The scope's entries in the catalog: the stages' only way to it.
    pub(super) catalog: ScopeCatalog<'a>,
    /// Dropped by the store stage when it ends (it is the last stage that reports), which
    /// ends the caller's report loop.
    pub(super) reports: Mutex<Option<Sender<Event>>>,
    /// Which files each input is still waiting for.
    pub(super) tracker: Mutex<InputTracker>,
    /// Which contents are claimed, pinned or orphaned ("nothing lost, nothing duplicated").
    pub(super) ledger: ContentLedger,
    /// Set when a stage hits an error that ends the run (model or store unusable).
    pub(super) fatal: Mutex<Option<Error>>,
    cancelled: AtomicBool,
    /// Set from outside to end the run early: no new files are started, what is in flight is
    /// stored, and the catalog stays true to the store.
    stop: &'a AtomicBool,
    /// Cards stored for failed, skipped and archive entries ([`entry_cards`]).
    pub(super) entry_cards: AtomicU64,
    /// Archives on disk expanded in this run: (entry, member locators seen).
    /// Each with the input it came from: recorded when that input is complete (or at the
    /// end of the run).
    containers: Mutex<Vec<(usize, CatalogEntry, Vec<String>)>>,
    /// Bytes in flight from reading a file to embedding it ([`Config::in_flight_bytes`]).
    pub(super) gate: ByteGate,
    /// Leaves handed to extraction, and leaves whose content the ledger has looked at (or
    /// that ended before): see [`Run::send_removed`].
    pub(super) handoff: LeafHandoff,
}

impl<'a> Run<'a> {
    /// The shared state of a run in `scope`; its ledger lines and events go to `reports`.
    pub(super) fn new(
        ing: &'a Services,
        scope: &'a Scope,
        stop: &'a AtomicBool,
        reports: Sender<Event>,
    ) -> Self {
        Run {
            ing,
            scope,
            catalog: ScopeCatalog::new(ing.catalog(), scope),
            reports: Mutex::new(Some(reports)),
            tracker: Mutex::new(InputTracker::default()),
            ledger: ContentLedger::default(),
            fatal: Mutex::new(None),
            cancelled: AtomicBool::new(false),
            stop,
            entry_cards: AtomicU64::new(0),
            containers: Mutex::new(Vec::new()),
            gate: ByteGate::new(ing.config().in_flight_bytes),
            handoff: LeafHandoff::default(),
        }
    }
}

impl Run<'_> {
    pub(super) fn report(
        &self,
        locator: &str,
        status: FileStatus,
        reason: Option<String>,
        chunks: u32,
        hash: Option<String>,
    ) {
        self.send_report(
            FileReport::new(locator, status)
                .reason(reason)
                .chunks(chunks)
                .hash(hash),
        );
    }

    /// The line of a member hidden by an earlier member of the same name. Its locator is that
    /// earlier member's, whose own line may still be on its way: this line must not count
    /// as that one, or the input would complete (and its archive be judged incomplete)
    /// before the earlier member is stored.
    pub(super) fn report_shadowed(&self, locator: &str, reason: &str) {
        let report = FileReport::new(locator, FileStatus::Skipped).reason(Some(reason.to_string()));
        self.send_event(Event::File(report));
    }

    pub(super) fn send_report(&self, report: FileReport) {
        // Under the tracker's lock: an input's completion goes after its last line.
        let done = {
            let mut tracker = lock(&self.tracker);
            let done = tracker.line(&report.locator);
            self.send_event(Event::File(report));
            done
        };
        if let Some(input) = done {
            self.input_complete(input);
        }
    }

    /// Every line of input `input` is sent: record its archives, then tell the caller.
    pub(super) fn input_complete(&self, input: usize) {
        if let Err(e) = self.finish_containers_of(Some(input)) {
            self.fail_run(e);
        }
        self.send_event(Event::InputDone(input));
    }

    pub(super) fn send_event(&self, event: Event) {
        if let Some(tx) = lock(&self.reports).as_ref() {
            let _ = tx.send(event);
        }
    }

    /// A file of the current input goes on to a later stage: its input waits for its line.
    pub(super) fn expect_line(&self, locator: &str) {
        lock(&self.tracker).expect(locator);
    }

    /// The input the walk stage is on.
    pub(super) fn current_input(&self) -> usize {
        lock(&self.tracker).current()
    }

    /// An archive of the current input was expanded, meeting the members `seen`: recorded
    /// when the input is complete, if every member reached the catalog
    /// ([`Run::finish_containers_of`]).
    pub(super) fn archive_expanded(&self, entry: CatalogEntry, seen: Vec<String>) {
        let input = self.current_input();
        lock(&self.containers).push((input, entry, seen));
    }

    /// The walk stage starts input `input`.
    pub(super) fn input_started(&self, input: usize) {
        lock(&self.tracker).started(input);
    }

    /// The walk stage is through input `input`: complete now if no file of it is on its way.
    pub(super) fn input_walked(&self, input: usize) {
        let complete = lock(&self.tracker).walked(input);
        if let Some(input) = complete {
            self.input_complete(input);
        }
    }

    /// Send the removal of `locator` on once every leaf handed to extraction so far has been
    /// looked at ([`handoff::LeafHandoff`]: a file it was renamed to has then pinned its
    /// content, which is kept, not deleted and embedded again); none once the run halted (an
    /// unfinished run removes nothing: the next one decides).
    pub(super) fn send_removed(&self, index: &Sender<IndexItem>, locator: String) {
        self.handoff.wait_all_looked(|| self.halted());
        if !self.halted() {
            let _ = index.send(IndexItem::Removed { locator });
        }
    }

    /// A file reached `stage`.
    pub(super) fn stage(&self, locator: &str, stage: FileStage) {
        self.send_event(Event::Stage(locator.to_string(), stage));
    }

    pub(super) fn fail_run(&self, e: Error) {
        self.cancelled.store(true, Ordering::SeqCst);
        let mut f = lock(&self.fatal);
        if f.is_none() {
            *f = Some(e);
        }
    }

    /// One card pass ([`entry_cards`]); a failure fails the run.
    pub(super) fn write_entry_cards(&self, pass: entry_cards::Pass) {
        match entry_cards::write_entry_cards(self.ing, &self.catalog, pass) {
            Ok(n) => {
                self.entry_cards.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => self.fail_run(e),
        }
    }

    /// Delete the cards of the entries replaced or removed so far, before their files'
    /// lines go out: a deleted or mended file is not found by its old card once its line
    /// says so. A failure fails the run.
    pub(super) fn drop_retired_cards(&self) {
        if let Err(e) = entry_cards::delete_retired_cards(self.ing, &self.catalog) {
            self.fail_run(e);
        }
    }

    /// A failed run's last words: the cards of entries it replaced or removed go if the
    /// store lets them (else the next open's repair deletes them), the catalog is saved.
    pub(super) fn end_failed(&self) {
        if let Err(e) = entry_cards::delete_retired_cards(self.ing, &self.catalog) {
            tracing::warn!("cards of replaced entries left for repair: {e}");
        }
        let _ = self.catalog.save();
    }

    /// Whether the run failed: what is in flight is dropped, not stored.
    pub(super) fn failed(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Whether to start no new work: the run failed, or was asked to stop.
    pub(super) fn halted(&self) -> bool {
        self.failed() || self.stop.load(Ordering::SeqCst)
    }

    /// Record expanded archives and forget members that are gone. An archive is recorded as
    /// unchanged-able only when every member it produced reached the catalog.
    pub(super) fn finish_containers(&self) -> Result<()> {
        self.finish_containers_of(None)
    }

    /// [`Run::finish_containers`] for the archives of input `input` only (`None`: all).
    pub(super) fn finish_containers_of(&self, input: Option<usize>) -> Result<()> {
        let containers: Vec<(CatalogEntry, Vec<String>)> = {
            let mut all = lock(&self.containers);
            let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|(n, _, _)| input.is_none_or(|i| i == *n));
            *all = rest;
            mine.into_iter().map(|(_, e, seen)| (e, seen)).collect()
        };
        for (entry, seen) in containers {
            let seen: HashSet<String> = seen.into_iter().collect();
            let members = self.catalog.members_of(&entry.locator);
            for gone in members.iter().filter(|m| !seen.contains(&m.locator)) {
                let removed = self.catalog.remove(&gone.locator);
                if let Some((hash, chunks)) = removed.as_ref().and_then(CatalogEntry::content) {
                    self.release(&hash, chunks)?;
                }
            }
            let complete = self
                .catalog
                .has_all(seen.iter().filter(|m| **m != entry.locator));
            if complete {
                self.catalog.remake_nested_cards(&entry.locator);
                // A file that used to be indexed as a plain file and is now an archive.
                let replaced = self.catalog.put(entry);
                if let Some((hash, chunks)) = replaced {
                    self.release(&hash, chunks)?;
                }
            }
        }
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
            .put(meta.unindexed_entry(unread_status(status), reason));
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

/// The catalog status of a file that was not indexed: skipped (by a limit, a link…) or failed.
pub(super) fn unread_status(status: FileStatus) -> crate::index::EntryStatus {
    if status == FileStatus::Skipped {
        crate::index::EntryStatus::Skipped
    } else {
        crate::index::EntryStatus::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::Bench;
    use super::*;
    use crate::index::EntryStatus;
    use crossbeam_channel::Receiver;

    fn events(rx: &Receiver<Event>) -> Vec<String> {
        rx.try_iter()
            .map(|e| match e {
                Event::File(r) => format!("line {}", r.locator),
                Event::Stage(l, _) => format!("stage {l}"),
                Event::InputDone(n) => format!("input {n} done"),
            })
            .collect()
    }

    fn member(name: &str) -> CatalogEntry {
        CatalogEntry::indexed(format!("x.zip!/{name}"), Some("x.zip".into()), "h", 5, 0, 1)
    }

    fn archive() -> CatalogEntry {
        CatalogEntry::container("x.zip", "hx", 100, 1, "archive: 2 members", Vec::new())
    }

    #[test]
    fn an_input_completes_after_its_last_line_and_records_its_archive_then() {
        let b = Bench::new();
        let stop = AtomicBool::new(false);
        let (run, rx) = b.run(&stop);
        let seen = vec!["x.zip!/m1".to_string(), "x.zip!/m2".to_string()];
        run.input_started(0);
        for m in &seen {
            run.expect_line(m);
        }
        run.archive_expanded(archive(), seen);
        run.input_walked(0);
        assert!(events(&rx).is_empty(), "two lines are still on their way");
        for name in ["m1", "m2"] {
            run.catalog.put(member(name));
            run.report(
                &format!("x.zip!/{name}"),
                FileStatus::Indexed,
                None,
                1,
                None,
            );
        }
        assert_eq!(
            events(&rx),
            ["line x.zip!/m1", "line x.zip!/m2", "input 0 done"]
        );
        assert_eq!(
            run.catalog.get("x.zip").map(|e| e.status),
            Some(EntryStatus::Container)
        );
    }

    #[test]
    fn an_archive_whose_member_did_not_reach_the_catalog_is_opened_again_next_time() {
        let b = Bench::new();
        let stop = AtomicBool::new(false);
        let (run, rx) = b.run(&stop);
        run.input_started(0);
        run.archive_expanded(
            archive(),
            vec!["x.zip!/m1".to_string(), "x.zip!/m2".to_string()],
        );
        run.catalog.put(member("m1"));
        run.input_walked(0);
        assert_eq!(events(&rx), ["input 0 done"]);
        assert_eq!(
            run.catalog.get("x.zip"),
            None,
            "not recorded as unchanged-able"
        );
        assert!(run.catalog.get("x.zip!/m1").is_some());
    }

    #[test]
    fn the_first_failure_is_kept_and_halts_the_run() {
        let b = Bench::new();
        let stop = AtomicBool::new(false);
        let (run, _rx) = b.run(&stop);
        assert!(!run.halted());
        run.fail_run(Error::Pipeline("first".into()));
        run.fail_run(Error::Pipeline("second".into()));
        assert!(run.halted());
        let kept = lock(&run.fatal).take().map(|e| e.to_string());
        assert!(kept.is_some_and(|e| e.contains("first")));
        // Stopping from outside halts too.
        let stop = AtomicBool::new(true);
        let (run, _rx) = b.run(&stop);
        assert!(run.halted());
    }
}
