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
//! Each stage is a struct in its file, owning its state and knobs, built from the run's
//! shared state and run on its own thread with the channels it reads and writes; each returns
//! its tally (busy time, chunks embedded) when it ends, and has its own unit tests:
//! [`walk::WalkStage`] (stage 1: walk folders, answer unchanged files from the catalog,
//! unpack containers), [`extract::ExtractStage`] (stage 2: extract in isolated workers,
//! chunk), [`embed::EmbedStage`] (stage 3: batch chunks across files and embed them),
//! [`store::StoreStage`] (stage 4: upsert, record files in the catalog, resolve duplicates,
//! checkpoint). What they share is [`run::Run`]: the scope's catalog view ([`books`]), the
//! content ledger ([`ledger`]: claims, pins, orphans), the input tracker ([`inputs`]), the
//! leaf handoff ([`handoff`]), the byte gate, the report channel, and the actions any stage may
//! take (send a line, record a file that was not indexed, release a content, fail the run).
//! [`entry_cards`] gives failed, skipped and archive entries a card point of their own at
//! each checkpoint and at the end of a run. This file holds the stage contracts (the items
//! that travel between stages) and [`run`], which wires the stages with bounded channels.

mod books;
mod embed;
mod entry_cards;
mod extract;
mod handoff;
mod inputs;
mod ledger;
mod memo;
pub mod quarantine;
mod resume;
mod run;
mod store;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;
mod walk;

pub(crate) use entry_cards::rewrite_entry_cards;
pub use inputs::Input;

use embed::EmbedStage;
use extract::ExtractStage;
use run::Run;
use store::StoreStage;
use walk::WalkStage;

use crate::embed::Chunk;
use crate::error::Result;
use crate::gate::Permit;
use crate::index::objects::ContentRecord;
use crate::index::{CatalogEntry, LastRun, ShadowedMember, StoredChunk};
use crate::lock;
use crate::report::{now_secs, FileReport, IngestReport, StageSeconds};
use crate::services::Services;
use crossbeam_channel::{bounded, unbounded};
use extractors::{Locator, Scope};
use std::sync::atomic::{AtomicBool, Ordering};
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

/// A stage's busy time, added to from any of its threads.
#[derive(Default)]
struct BusyTime(Mutex<Duration>);

impl BusyTime {
    /// Run `f`, counting its time.
    fn time<T>(&self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        self.add(t.elapsed());
        out
    }

    fn add(&self, d: Duration) {
        *lock(&self.0) += d;
    }

    fn total(&self) -> Duration {
        *lock(&self.0)
    }
}

/// A stage's tally once its thread ended; a stage that panicked ends the run as before.
fn join<T>(stage: std::thread::ScopedJoinHandle<'_, T>) -> T {
    stage
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The inputs of a run: a list, or a feed that ends when its sender is dropped (an upload
/// queue keeps one run going while uploads keep coming).
pub(crate) type Inputs<'a> = Box<dyn Iterator<Item = Input> + Send + 'a>;

/// [`run`] once `scope` has no other run going: the scope's run slot is held for the run
/// (`crate::run_slots`).
pub(crate) fn run_in_turn(
    services: &Services,
    inputs: Inputs<'_>,
    scope: &Scope,
    progress: &dyn RunObserver,
    stop: &AtomicBool,
    keep_lines: bool,
) -> Result<IngestReport> {
    crate::access::check_scope(scope).map_err(crate::Error::Scope)?;
    // Chunks of another recipe must not join this index's: refused before anything is read,
    // and before the run marks the index as being written (a refused run leaves nothing to
    // repair).
    let has_content = services.records_may_predate_content();
    let recipe = crate::embed::Recipe::of(&services.config().chunking);
    crate::records::check_recipe(services.data_dir(), &recipe, has_content)?;
    if services.config().catalog.is_some() {
        crate::records::agree_on_recipe(services.catalog(), &recipe)?;
    }
    let slot = services.runs().begin(services.data_dir(), scope)?;
    let report = run(services, inputs, scope, progress, stop, keep_lines);
    slot.end(report.is_ok())?;
    report
}

/// One run: the stages on their threads, joined by bounded channels; reports go to
/// `progress` as files are decided. The returned ledger holds every line when `keep_lines`
/// (else only the counts: a feed may run for days). The caller holds the scope's run slot
/// ([`run_in_turn`]).
fn run(
    ing: &Services,
    inputs: Inputs<'_>,
    scope: &Scope,
    progress: &dyn RunObserver,
    stop: &AtomicBool,
    keep_lines: bool,
) -> Result<IngestReport> {
    let started = Instant::now();
    let (report_tx, report_rx) = unbounded::<Event>();
    ing.progress().start();
    let run = Run::new(ing, scope, stop, report_tx);
    let cap = ing.config().channel_capacity;
    let (leaf_tx, leaf_rx) = bounded::<Work>(cap);
    // Extracted files wait in `gated` holding their permits; the hand-off to the embed
    // stage is a rendezvous, so every file waiting for it is counted in the byte budget.
    let (gated_tx, gated_rx) = bounded::<Gated>(cap);
    let (index_tx, index_rx) = bounded::<IndexItem>(0);
    let (store_tx, store_rx) = bounded::<StoreItem>(cap);
    let mut report = IngestReport::default();

    let walk = WalkStage::new(&run);
    let extract = ExtractStage::new(&run);
    let embed = EmbedStage::new(&run);
    let store = StoreStage::new(&run);
    let tallies = std::thread::scope(|s| {
        let walker_index_tx = index_tx.clone();
        let walk = s.spawn(move || walk.run(inputs, leaf_tx, walker_index_tx));
        let extract = s.spawn(move || extract.run(leaf_rx, gated_tx));
        s.spawn(move || {
            for (item, permit) in gated_rx.iter() {
                let _ = index_tx.send(item); // fails only when the embed stage ended
                drop(permit);
            }
        });
        let embed = s.spawn(move || embed.run(index_rx, store_tx));
        let store = s.spawn(move || store.run(store_rx));
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
        (join(walk), join(extract), join(embed), join(store))
    });
    let (walked, extracted, embedded, stored) = tallies;
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
    if let Some(store) = ing.opened_store() {
        store.flush();
        let started = Instant::now();
        if let Err(e) = store.optimize() {
            // Searches stay correct (exact) without it; the next run tries again.
            tracing::warn!("could not optimize the index: {e}");
        }
        optimize = started.elapsed();
    }
    report.summary.chunks_embedded = embedded.chunks;
    report.summary.chunks_reused = embedded.reused;
    report.summary.tokens_embedded = embedded.tokens;
    report.summary.chunks_multilingual = embedded.multilingual;
    report.summary.entry_cards = run.entry_cards.load(Ordering::Relaxed);
    if report.summary.chunks_embedded > 0 {
        if let Ok(e) = ing.embedder() {
            report.summary.model = e.describe();
        }
        if embedded.multilingual > 0 {
            if let Ok(Some(m)) = ing.multilingual_embedder() {
                report.summary.model = format!(
                    "{}; {} chunks in other languages also by {}",
                    report.summary.model,
                    embedded.multilingual,
                    m.describe()
                );
            }
        }
    }
    // Observers saw completion order; the returned ledger is in locator order.
    report.files.sort_by(|a, b| a.locator.cmp(&b.locator));
    report.summary.seconds = StageSeconds {
        unpack: walked.unpack.saturating_sub(walked.blocked).as_secs_f64(),
        extract: extracted.extract.as_secs_f64(),
        chunk: extracted.chunk.as_secs_f64(),
        embed: embedded.busy.as_secs_f64(),
        store: stored.busy.as_secs_f64(),
        optimize: optimize.as_secs_f64(),
        total: started.elapsed().as_secs_f64(),
    };
    {
        let catalog = ing.catalog();
        catalog.set_last_run(LastRun {
            finished_at: now_secs(),
            summary: report.summary.clone(),
        });
        catalog.save()?;
    }
    Ok(report)
}
