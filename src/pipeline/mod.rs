//! The ingestion pipeline: one run, from the inputs to the store (the [`crate::Ingestor`] owns
//! the long-lived parts it uses).
//!
//! ```text
//!  walk + unpack ──leaves──▶ extract + chunk (rayon) ──files──▶ embed ──batches──▶ store
//!   (1 thread)    bounded      (N threads)            bounded  (1 thread)  bounded  (1 thread)
//! ```
//!
//! Every channel is bounded, so memory stays flat however large the input: a slow embedder
//! slows extraction down instead of letting extracted text pile up. Items differ in size by
//! orders of magnitude, so the bytes in flight from reading to embedding are budgeted too
//! ([`Config::in_flight_bytes`], see `crate::gate`). Reports flow back to the
//! caller as files finish. A file counts as indexed only once all its chunks are stored.

//!
//! Each stage has its file: [`walk`] (stage 1: walk folders, answer unchanged files from the
//! catalog, unpack containers), [`extract`] (stage 2: extract in isolated workers, chunk),
//! [`embed`] (stage 3: batch chunks across files and embed them), [`store`] (stage 4: upsert,
//! record files in the catalog, resolve duplicates, retire content no file holds);
//! [`entry_cards`] gives failed, skipped and archive entries a card point of their own at
//! each checkpoint and at the end of a run. This file
//! holds what they share: the stage contracts (the items that travel between stages), the
//! run's state, and [`run`], which wires the stages with bounded channels.

mod books;
mod embed;
mod entry_cards;
mod extract;
mod handoff;
mod inputs;
mod ledger;
mod store;
#[cfg(test)]
mod tests;
mod walk;

pub(crate) use entry_cards::rewrite_entry_cards;

use crate::embed::Chunk;
use crate::error::{Error, Result};
use crate::gate::{ByteGate, Permit};
use crate::index::objects::ContentRecord;
use crate::index::{CatalogEntry, LastRun, ShadowedMember, StoredChunk};
use crate::ingestor::{Ingestor, Input};
use crate::lock;
use crate::report::{now_secs, FileReport, FileStatus, IngestReport, StageSeconds};
use crossbeam_channel::{bounded, unbounded, Sender};
use extractors::{Locator, Scope};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A leaf on its way to extraction.
struct Work {
    locator: Locator,
    bytes: Vec<u8>,
    detected: extractors::Detected,
    /// The archive on disk it came from (None for a plain file).
    parent: Option<String>,
    size: u64,
    mtime_ns: u64,
    /// Its bytes' share of [`Config::in_flight_bytes`].
    permit: Permit,
    /// User tags (`key=value`, sorted) given with its upload.
    tags: Vec<String>,
}

/// An item from the extract stage with the bytes it holds in flight, given back when the embed
/// stage takes it.
type Gated = (IndexItem, Option<Permit>);

/// What expanding one top-level input met, beyond the files sent to extraction.
#[derive(Default)]
struct Expansion {
    /// Every locator catalogued (files, unread members, nested archives).
    seen: Vec<String>,
    /// The top-level input's hash and summary, when it turned out to be an archive.
    opened: Option<(String, String)>,
    /// Members hidden by an earlier member of the same name.
    shadowed: Vec<ShadowedMember>,
    /// User tags every file of the input gets (an upload's).
    tags: Vec<String>,
}

/// A file's facts as they go into the catalog once it is stored.
#[derive(Debug, Clone)]
struct FileMeta {
    locator: String,
    parent: Option<String>,
    hash: String,
    size: u64,
    mtime_ns: u64,
    /// The type detected from its bytes.
    mime: Option<String>,
    /// The content hash (and its chunk count) this locator held before, if different.
    previous: Option<(String, u32)>,
    /// User tags (`key=value`, sorted).
    tags: Vec<String>,
}

impl FileMeta {
    /// Its catalog entry once its `chunks` are stored.
    fn indexed_entry(&self, chunks: u32) -> CatalogEntry {
        CatalogEntry::indexed(
            self.locator.clone(),
            self.parent.clone(),
            self.hash.clone(),
            self.size,
            self.mtime_ns,
            chunks,
        )
        .with_mime(self.mime.clone())
        .with_tags(self.tags.clone())
    }

    /// Its catalog entry when its content was not indexed (`status` says why not).
    fn unindexed_entry(&self, status: crate::index::EntryStatus, reason: &str) -> CatalogEntry {
        CatalogEntry::unindexed(
            self.locator.clone(),
            self.parent.clone(),
            self.hash.clone(),
            self.size,
            self.mtime_ns,
            status,
            reason,
        )
        .with_mime(self.mime.clone())
        .with_tags(self.tags.clone())
    }
}

/// What the extract stage hands the indexing side.
enum IndexItem {
    /// New content: embed these chunks, then record the file.
    Content {
        meta: FileMeta,
        chunks: Vec<Chunk>,
        content: Box<ContentRecord>,
    },
    /// Content already indexed (or being indexed) under another locator in this scope.
    Duplicate { meta: FileMeta },
    /// Extraction of claimed content failed: duplicates waiting for it fail too.
    Abandoned { hash: String, reason: String },
    /// A locator that no longer exists (an archive member that disappeared).
    Removed { locator: String },
}

/// What the embed stage hands the store stage.
enum StoreItem {
    Points(Vec<StoredChunk>),
    /// Every chunk of the file is in a `Points` batch sent before this.
    FileStored {
        meta: FileMeta,
        chunks: u32,
        /// Written by the store stage, the one thread that also deletes content indexes: a
        /// content released and claimed again in one run keeps its files.
        content: Box<ContentRecord>,
    },
    Other(IndexItem),
}

/// How far a file has come before its ledger line: what [`RunObserver::stage`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileStage {
    /// Extracted and chunked; waiting for the model.
    Extracted,
    /// Its chunks are being embedded.
    Embedding,
}

/// What a run tells its caller as it goes, in order, on the caller's thread: every ledger
/// line, the intermediate stages of files on their way to one, and when an input is
/// complete (every line of it sent). A plain `Fn(&FileReport)` takes the lines alone.
pub(crate) trait RunObserver: Sync {
    /// A ledger line.
    fn file(&self, report: &FileReport);
    /// A file reached `stage` (its line comes later).
    fn stage(&self, _locator: &str, _stage: FileStage) {}
    /// Input number `input` (0-based, in the order the inputs came) has every line sent.
    /// Not called for an input the run stopped in the middle of.
    fn input_done(&self, _input: usize) {}
}

impl<F: Fn(&FileReport) + Sync + ?Sized> RunObserver for F {
    fn file(&self, report: &FileReport) {
        self(report)
    }
}

/// What the stages send the caller's thread.
enum Event {
    File(FileReport),
    Stage(String, FileStage),
    InputDone(usize),
}

/// Busy time per stage, accumulated across threads.
#[derive(Default)]
struct Timings {
    unpack: Mutex<Duration>,
    /// Part of `unpack` spent blocked on a full channel (back-pressure, not work).
    unpack_blocked: Mutex<Duration>,
    extract: Mutex<Duration>,
    chunk: Mutex<Duration>,
    embed: Mutex<Duration>,
    store: Mutex<Duration>,
}

fn timed<T>(slot: &Mutex<Duration>, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    *lock(slot) += t.elapsed();
    out
}

/// State shared by the stages of one run.
struct Run<'a> {
    ing: &'a Ingestor,
    scope: &'a Scope,
    /// The scope's entries in the catalog: the stages' only way to it.
    catalog: books::ScopeCatalog<'a>,
    /// Dropped by the store stage when it ends (it is the last stage that reports), which
    /// ends the caller's report loop.
    reports: Mutex<Option<Sender<Event>>>,
    /// Which files each input is still waiting for.
    tracker: Mutex<inputs::InputTracker>,
    timings: Timings,
    /// Which contents are claimed, pinned or orphaned ("nothing lost, nothing duplicated").
    ledger: ledger::ContentLedger,
    /// Set when a stage hits an error that ends the run (model or store unusable).
    fatal: Mutex<Option<Error>>,
    cancelled: AtomicBool,
    /// Set from outside to end the run early: no new files are started, what is in flight is
    /// stored, and the catalog stays true to the store.
    stop: &'a AtomicBool,
    /// Chunks embedded in this run.
    embedded: AtomicU64,
    /// Model tokens of those chunks.
    embedded_tokens: AtomicU64,
    /// Cards stored for failed, skipped and archive entries ([`entry_cards`]).
    entry_cards: AtomicU64,
    /// When the catalog was last checkpointed, and how long that took.
    saved_at: Mutex<(Instant, Duration)>,
    /// Archives on disk expanded in this run: (entry, member locators seen).
    /// Each with the input it came from: recorded when that input is complete (or at the
    /// end of the run).
    containers: Mutex<Vec<(usize, CatalogEntry, Vec<String>)>>,
    /// Bytes in flight from reading a file to embedding it ([`Config::in_flight_bytes`]).
    gate: ByteGate,
    /// Leaves handed to extraction, and leaves whose content the ledger has looked at (or
    /// that ended before): see [`Run::send_removed`].
    handoff: handoff::LeafHandoff,
}

impl Run<'_> {
    fn report(
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
    fn report_shadowed(&self, locator: &str, reason: &str) {
        let report = FileReport::new(locator, FileStatus::Skipped).reason(Some(reason.to_string()));
        self.send_event(Event::File(report));
    }

    fn send_report(&self, report: FileReport) {
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
    fn input_complete(&self, input: usize) {
        if let Err(e) = self.finish_containers_of(Some(input)) {
            self.fail_run(e);
        }
        self.send_event(Event::InputDone(input));
    }

    fn send_event(&self, event: Event) {
        if let Some(tx) = lock(&self.reports).as_ref() {
            let _ = tx.send(event);
        }
    }

    /// A file of the current input goes on to a later stage: its input waits for its line.
    fn expect_line(&self, locator: &str) {
        lock(&self.tracker).expect(locator);
    }

    /// The input the walk stage is on.
    fn current_input(&self) -> usize {
        lock(&self.tracker).current()
    }

    /// The walk stage starts input `input`.
    fn input_started(&self, input: usize) {
        lock(&self.tracker).started(input);
    }

    /// The walk stage is through input `input`: complete now if no file of it is on its way.
    fn input_walked(&self, input: usize) {
        let complete = lock(&self.tracker).walked(input);
        if let Some(input) = complete {
            self.input_complete(input);
        }
    }

    /// Send the removal of `locator` on once every leaf handed to extraction so far has been
    /// looked at ([`handoff::LeafHandoff`]: a file it was renamed to has then pinned its
    /// content, which is kept, not deleted and embedded again); none once the run halted (an
    /// unfinished run removes nothing: the next one decides).
    fn send_removed(&self, index: &Sender<IndexItem>, locator: String) {
        self.handoff.wait_all_looked(|| self.halted());
        if !self.halted() {
            let _ = index.send(IndexItem::Removed { locator });
        }
    }

    /// A file reached `stage`.
    fn stage(&self, locator: &str, stage: FileStage) {
        self.send_event(Event::Stage(locator.to_string(), stage));
    }

    /// Save the catalog now and then during a long run, so a crash loses little work (what
    /// the saved catalog and the store disagree on is repaired at the next start). Every
    /// `checkpoint_interval` (2 s), or less often for a catalog so large that saving it would
    /// take over 5 % of the run; after every item when the interval is zero. Each checkpoint
    /// first stores the cards the entries changed since want ([`entry_cards`]), so a run fed
    /// for days (an upload queue) does not keep them waiting.
    fn checkpoint(&self) {
        const COST_SHARE: u32 = 20;
        let every = self.ing.config.checkpoint_interval;
        let mut saved = lock(&self.saved_at);
        let (at, cost) = *saved;
        if every.is_zero() || at.elapsed() >= every.max(cost * COST_SHARE) {
            if !self.halted() {
                self.write_entry_cards(entry_cards::Pass::Checkpoint);
            }
            let started = Instant::now();
            if let Err(e) = self.catalog.save() {
                tracing::warn!("catalog checkpoint: {e}");
            }
            *saved = (Instant::now(), started.elapsed());
        }
    }

    fn fail_run(&self, e: Error) {
        self.cancelled.store(true, Ordering::SeqCst);
        let mut f = lock(&self.fatal);
        if f.is_none() {
            *f = Some(e);
        }
    }

    /// One card pass ([`entry_cards`]); a failure fails the run.
    fn write_entry_cards(&self, pass: entry_cards::Pass) {
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
    fn drop_retired_cards(&self) {
        if let Err(e) = entry_cards::delete_retired_cards(self.ing, &self.catalog) {
            self.fail_run(e);
        }
    }

    /// A failed run's last words: the cards of entries it replaced or removed go if the
    /// store lets them (else the next open's repair deletes them), the catalog is saved.
    fn end_failed(&self) {
        if let Err(e) = entry_cards::delete_retired_cards(self.ing, &self.catalog) {
            tracing::warn!("cards of replaced entries left for repair: {e}");
        }
        let _ = self.catalog.save();
    }

    /// Whether to start no new work: the run failed, or was asked to stop.
    fn halted(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst) || self.stop.load(Ordering::SeqCst)
    }

    /// Record expanded archives and forget members that are gone. An archive is recorded as
    /// unchanged-able only when every member it produced reached the catalog.
    fn finish_containers(&self) -> Result<()> {
        self.finish_containers_of(None)
    }

    /// [`Run::finish_containers`] for the archives of input `input` only (`None`: all).
    fn finish_containers_of(&self, input: Option<usize>) -> Result<()> {
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
}

/// The catalog status of a file that was not indexed: skipped (by a limit, a link…) or failed.
fn unread_status(status: FileStatus) -> crate::index::EntryStatus {
    if status == FileStatus::Skipped {
        crate::index::EntryStatus::Skipped
    } else {
        crate::index::EntryStatus::Failed
    }
}

/// The inputs of a run: a list, or a feed that ends when its sender is dropped (an upload
/// queue keeps one run going while uploads keep coming).
pub(crate) type Inputs<'a> = Box<dyn Iterator<Item = Input> + Send + 'a>;

/// One run: the stages on their threads, joined by bounded channels; reports go to
/// `progress` as files are decided. The returned ledger holds every line when `keep_lines`
/// (else only the counts: a feed may run for days). The caller holds the scope's run slot
/// (`Ingestor::begin_run`).
pub(crate) fn run(
    ing: &Ingestor,
    inputs: Inputs<'_>,
    scope: &Scope,
    progress: &dyn RunObserver,
    stop: &AtomicBool,
    keep_lines: bool,
) -> Result<IngestReport> {
    let started = Instant::now();
    // Chunks of another recipe must not join this index's: refused before anything is read.
    let has_content = !crate::lock(&ing.catalog).scopes().is_empty();
    crate::records::check_recipe(
        &ing.config.data_dir,
        &crate::embed::Recipe::of(&ing.config.chunking),
        has_content,
    )?;
    let (report_tx, report_rx) = unbounded::<Event>();
    let run = Run {
        ing,
        scope,
        catalog: books::ScopeCatalog::new(&ing.catalog, scope),
        reports: Mutex::new(Some(report_tx)),
        tracker: Mutex::new(inputs::InputTracker::default()),
        timings: Timings::default(),
        ledger: ledger::ContentLedger::default(),
        fatal: Mutex::new(None),
        cancelled: AtomicBool::new(false),
        stop,
        embedded: AtomicU64::new(0),
        embedded_tokens: AtomicU64::new(0),
        entry_cards: AtomicU64::new(0),
        saved_at: Mutex::new((Instant::now(), Duration::ZERO)),
        containers: Mutex::new(Vec::new()),
        gate: ByteGate::new(ing.config.in_flight_bytes),
        handoff: handoff::LeafHandoff::default(),
    };
    let cap = ing.config.channel_capacity;
    let (leaf_tx, leaf_rx) = bounded::<Work>(cap);
    // Extracted files wait in `gated` holding their permits; the hand-off to the embed
    // stage is a rendezvous, so every file waiting for it is counted in the byte budget.
    let (gated_tx, gated_rx) = bounded::<Gated>(cap);
    let (index_tx, index_rx) = bounded::<IndexItem>(0);
    let (store_tx, store_rx) = bounded::<StoreItem>(cap);
    let mut report = IngestReport::default();

    std::thread::scope(|s| {
        let run = &run;
        let walker_index_tx = index_tx.clone();
        s.spawn(move || run.walk_stage(inputs, leaf_tx, walker_index_tx));
        s.spawn(move || run.extract_stage(leaf_rx, gated_tx));
        s.spawn(move || {
            for (item, permit) in gated_rx.iter() {
                let _ = index_tx.send(item); // fails only when the embed stage ended
                drop(permit);
            }
        });
        s.spawn(move || run.embed_stage(index_rx, store_tx));
        s.spawn(move || run.store_stage(store_rx));
        for event in report_rx.iter() {
            match event {
                Event::File(r) => {
                    progress.file(&r);
                    report.summary.add(&r);
                    if keep_lines {
                        report.files.push(r);
                    }
                }
                Event::Stage(locator, stage) => progress.stage(&locator, stage),
                Event::InputDone(input) => progress.input_done(input),
            }
        }
    });
    // All stage threads have ended here (the scope joined them).
    if let Some(e) = lock(&run.fatal).take() {
        run.end_failed();
        return Err(e);
    }
    run.finish_containers()?;
    run.delete_orphans()?;
    run.write_entry_cards(entry_cards::Pass::End);
    if let Some(e) = lock(&run.fatal).take() {
        run.end_failed();
        return Err(e);
    }
    let mut optimize = Duration::ZERO;
    if let Some(store) = lock(&ing.store).as_ref() {
        store.flush();
        let started = Instant::now();
        if let Err(e) = store.optimize() {
            // Searches stay correct (exact) without it; the next run tries again.
            tracing::warn!("could not optimize the index: {e}");
        }
        optimize = started.elapsed();
    }
    let t = &run.timings;
    report.summary.chunks_embedded = run.embedded.load(Ordering::Relaxed);
    report.summary.tokens_embedded = run.embedded_tokens.load(Ordering::Relaxed);
    report.summary.entry_cards = run.entry_cards.load(Ordering::Relaxed);
    if report.summary.chunks_embedded > 0 {
        if let Ok(e) = ing.embedder() {
            report.summary.model = e.describe();
        }
    }
    // Observers saw completion order; the returned ledger is in locator order.
    report.files.sort_by(|a, b| a.locator.cmp(&b.locator));
    report.summary.seconds = StageSeconds {
        unpack: lock(&t.unpack)
            .saturating_sub(*lock(&t.unpack_blocked))
            .as_secs_f64(),
        extract: lock(&t.extract).as_secs_f64(),
        chunk: lock(&t.chunk).as_secs_f64(),
        embed: lock(&t.embed).as_secs_f64(),
        store: lock(&t.store).as_secs_f64(),
        optimize: optimize.as_secs_f64(),
        total: started.elapsed().as_secs_f64(),
    };
    {
        let mut catalog = lock(&ing.catalog);
        catalog.set_last_run(LastRun {
            finished_at: now_secs(),
            summary: report.summary.clone(),
        });
        catalog.save()?;
    }
    Ok(report)
}
