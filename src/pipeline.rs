//! The ingestion pipeline and the [`Ingestor`] that owns its long-lived parts.
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

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use extractors::{ExtractInput, FileContentIndex, FileKind, IndexStatus, Locator, Scope};
use rayon::prelude::*;

use crate::catalog::{Catalog, CatalogEntry, CatalogStats, EntryStatus, LastRun, ShadowedMember};
use crate::config::Config;
use crate::embed::{find_model_dir, Chunk, Chunker, Embedder, FastEmbedder};
use crate::error::{Error, Result};
use crate::gate::{ByteGate, Permit};
use crate::lock;
use crate::report::{now_secs, FileReport, FileStatus, IngestReport, StageSeconds};
use crate::store::{Hit, StoredChunk, VectorStore};
use crate::unpack::{walk_with, DiskEntry, Leaf, Unpacker, WalkOptions, HIDDEN_REASON};

/// What to ingest.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file or folder on disk.
    Path(PathBuf),
    /// Bytes from elsewhere (an upload), named by `name`.
    Bytes { name: String, bytes: Vec<u8> },
}

/// The long-lived ingestion runtime: configuration, catalog, and (loaded on first use) the
/// embedding model and the vector store. `Send + Sync`: share one per process.
///
/// Ingest calls block while another ingest call on the same `Ingestor` runs; searches do not.
pub struct Ingestor {
    config: Config,
    catalog: Mutex<Catalog>,
    embedder: Mutex<Option<Arc<FastEmbedder>>>,
    store: Mutex<Option<Arc<VectorStore>>>,
    /// Parses documents: a pool of isolated workers, or in-process.
    extractor: Box<dyn extractors::Extractor>,
    run_lock: Mutex<()>,
}

impl std::fmt::Debug for Ingestor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ingestor")
            .field("data_dir", &self.config.data_dir)
            .finish()
    }
}

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
}

/// A file's facts as they go into the catalog once it is stored.
#[derive(Debug, Clone)]
struct FileMeta {
    locator: String,
    parent: Option<String>,
    hash: String,
    size: u64,
    mtime_ns: u64,
    /// The content hash (and its chunk count) this locator held before, if different.
    previous: Option<(String, u32)>,
}

/// What the extract stage hands the indexing side.
enum IndexItem {
    /// New content: embed these chunks, then record the file.
    Content {
        meta: FileMeta,
        chunks: Vec<Chunk>,
        content_index: Box<FileContentIndex>,
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
    FileStored { meta: FileMeta, chunks: u32 },
    Other(IndexItem),
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
    /// Dropped by the store stage when it ends (it is the last stage that reports), which
    /// ends the caller's report loop.
    reports: Mutex<Option<Sender<FileReport>>>,
    timings: Timings,
    /// Content hashes claimed for extraction in this run.
    claimed: Mutex<HashSet<String>>,
    /// Set when a stage hits an error that ends the run (model or store unusable).
    fatal: Mutex<Option<Error>>,
    cancelled: AtomicBool,
    /// Set from outside to end the run early: no new files are started, what is in flight is
    /// stored, and the catalog stays true to the store.
    stop: &'a AtomicBool,
    /// Chunks embedded in this run.
    embedded: AtomicU64,
    /// Contents no file holds any more but that a file in flight will hold (hash → chunks):
    /// kept for it to adopt, deleted when the run ends if it does not. Unpinned contents are
    /// deleted as soon as their last holder lets go.
    orphaned: Mutex<HashMap<String, u32>>,
    /// Contents a file in flight is about to hold (a duplicate on its way to the store):
    /// hash → number of such files.
    pinned: Mutex<HashMap<String, u32>>,
    /// When the catalog was last checkpointed, and how long that took.
    saved_at: Mutex<(Instant, Duration)>,
    /// Archives on disk expanded in this run: (entry, member locators seen).
    containers: Mutex<Vec<(CatalogEntry, Vec<String>)>>,
    /// Bytes in flight from reading a file to embedding it ([`Config::in_flight_bytes`]).
    gate: ByteGate,
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
        self.send_report(FileReport {
            locator: locator.to_string(),
            status,
            reason,
            chunks,
            hash,
            archive: false,
        });
    }

    fn send_report(&self, report: FileReport) {
        if let Some(tx) = lock(&self.reports).as_ref() {
            let _ = tx.send(report);
        }
    }

    /// A file stopped holding content `hash` (already changed in the catalog): re-point the
    /// content's chunks at the files that still hold it; delete them when none does, unless a
    /// file in flight is about to adopt them.
    fn release(&self, hash: &str, chunks: u32) -> Result<()> {
        let remaining = lock(&self.ing.catalog).locators_with_hash(self.scope, hash);
        if !remaining.is_empty() {
            return self.ing.store()?.set_locators(self.scope, hash, &remaining);
        }
        let wanted = lock(&self.pinned).contains_key(hash) || lock(&self.claimed).contains(hash);
        if wanted {
            lock(&self.orphaned).insert(hash.to_string(), chunks);
            Ok(())
        } else {
            self.delete_content(hash)
        }
    }

    /// Delete content `hash` of this scope: its points, and its content index unless another
    /// scope holds the same bytes. Every deletion of a content in a run goes through here.
    fn delete_content(&self, hash: &str) -> Result<()> {
        self.ing.store()?.delete_content(self.scope, hash)?;
        if let Err(e) = lock(&self.ing.catalog).drop_content_index(hash) {
            tracing::warn!("content index of {hash}: {e}");
        }
        Ok(())
    }

    fn pin(&self, hash: &str) {
        *lock(&self.pinned).entry(hash.to_string()).or_default() += 1;
    }

    fn unpin(&self, hash: &str) {
        let mut pinned = lock(&self.pinned);
        if let Some(n) = pinned.get_mut(hash) {
            *n -= 1;
            if *n == 0 {
                pinned.remove(hash);
            }
        }
    }

    /// Save the catalog now and then during a long run, so a crash loses little work (what
    /// the saved catalog and the store disagree on is repaired at the next start). Every
    /// `checkpoint_interval` (2 s), or less often for a catalog so large that saving it would
    /// take over 5 % of the run; after every item when the interval is zero.
    fn checkpoint(&self) {
        const COST_SHARE: u32 = 20;
        let every = self.ing.config.checkpoint_interval;
        let mut saved = lock(&self.saved_at);
        let (at, cost) = *saved;
        if every.is_zero() || at.elapsed() >= every.max(cost * COST_SHARE) {
            let started = Instant::now();
            if let Err(e) = lock(&self.ing.catalog).save() {
                tracing::warn!("catalog checkpoint: {e}");
            }
            *saved = (Instant::now(), started.elapsed());
        }
    }

    /// Delete the points of contents that no file holds at the end of the run.
    fn delete_orphans(&self) -> Result<()> {
        let orphaned = std::mem::take(&mut *lock(&self.orphaned));
        for hash in orphaned.into_keys() {
            let unheld = lock(&self.ing.catalog)
                .locators_with_hash(self.scope, &hash)
                .is_empty();
            if unheld {
                self.delete_content(&hash)?;
            }
        }
        Ok(())
    }

    fn fail_run(&self, e: Error) {
        self.cancelled.store(true, Ordering::SeqCst);
        let mut f = lock(&self.fatal);
        if f.is_none() {
            *f = Some(e);
        }
    }

    /// Record a member that holds no content of its own (skipped, failed, or an archive):
    /// whatever content the locator held before is released.
    fn record_without_content(
        &self,
        loc: &str,
        parent: Option<&str>,
        status: EntryStatus,
        reason: &str,
        archive_hash: Option<&str>,
    ) {
        let previous = {
            let mut cat = lock(&self.ing.catalog);
            let previous = cat.get(self.scope, loc).and_then(CatalogEntry::content);
            cat.put(
                self.scope,
                CatalogEntry {
                    locator: loc.to_string(),
                    parent: parent.map(str::to_string),
                    hash: archive_hash.map(str::to_string),
                    size: 0,
                    mtime_ns: 0,
                    status,
                    reason: Some(reason.to_string()),
                    chunks: 0,
                    shadowed: Vec::new(),
                },
            );
            previous
        };
        if let Some((hash, chunks)) = previous {
            if let Err(e) = self.release(&hash, chunks) {
                self.fail_run(e);
            }
        }
    }

    /// Record a member that was not extracted (skipped or failed) and report it.
    fn record_unread(
        &self,
        locator: &Locator,
        parent: Option<&str>,
        status: FileStatus,
        reason: String,
    ) {
        let loc = locator.to_string();
        let entry_status = if status == FileStatus::Skipped {
            EntryStatus::Skipped
        } else {
            EntryStatus::Failed
        };
        self.record_without_content(&loc, parent, entry_status, &reason, None);
        self.report(&loc, status, Some(reason), 0, None);
    }
}

impl Ingestor {
    /// Validate `config`, create the data directory and load the catalog. The model and the
    /// store are opened on first use, so opening is cheap.
    pub fn open(config: Config) -> Result<Self> {
        config.validate()?;
        crate::perms::prepare_data_dir(&config.data_dir)?;
        let catalog = Catalog::load(&config.data_dir)?;
        let ingestor = Ingestor {
            extractor: crate::isolation::build(&config.isolation),
            config,
            catalog: Mutex::new(catalog),
            embedder: Mutex::new(None),
            store: Mutex::new(None),
            run_lock: Mutex::new(()),
        };
        if crate::repair::DirtyMarker::present(&ingestor.config.data_dir) {
            let report = ingestor.repair()?;
            tracing::warn!(
                "the previous run did not finish; repaired the index: {} entries to index again, {} stale contents deleted, {} locator lists fixed",
                report.entries_forgotten,
                report.stale_contents_deleted,
                report.locators_fixed
            );
        }
        Ok(ingestor)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Make the catalog and the store agree (after a run that did not finish; see
    /// [`crate::RepairReport`]). Blocks while an ingest runs.
    pub fn repair(&self) -> Result<crate::RepairReport> {
        let _one_run_at_a_time = lock(&self.run_lock);
        let store = self.store()?;
        let report = crate::repair::repair(&mut lock(&self.catalog), &store)?;
        crate::repair::DirtyMarker::set(&self.config.data_dir)?.clear()?;
        Ok(report)
    }

    /// The embedding model, loaded on first call.
    pub fn embedder(&self) -> Result<Arc<FastEmbedder>> {
        let mut slot = lock(&self.embedder);
        if let Some(e) = slot.as_ref() {
            return Ok(Arc::clone(e));
        }
        let dir = find_model_dir(self.config.model_dir.as_deref())?;
        let e = Arc::new(FastEmbedder::load(&dir, self.config.embed_batch)?);
        *slot = Some(Arc::clone(&e));
        Ok(e)
    }

    /// The vector store, opened on first call.
    pub fn store(&self) -> Result<Arc<VectorStore>> {
        let mut slot = lock(&self.store);
        if let Some(s) = slot.as_ref() {
            return Ok(Arc::clone(s));
        }
        let s = Arc::new(VectorStore::open(&self.config.data_dir)?);
        *slot = Some(Arc::clone(&s));
        Ok(s)
    }

    /// Ingest a file or folder (archives included). Blocks until done.
    pub fn ingest_path(&self, path: impl AsRef<Path>, scope: &Scope) -> Result<IngestReport> {
        self.ingest(
            vec![Input::Path(path.as_ref().to_path_buf())],
            scope,
            &|_| {},
        )
    }

    /// Ingest bytes received from elsewhere (an upload) under `name`; archives are unpacked.
    pub fn ingest_bytes(&self, name: &str, bytes: Vec<u8>, scope: &Scope) -> Result<IngestReport> {
        self.ingest(
            vec![Input::Bytes {
                name: name.to_string(),
                bytes,
            }],
            scope,
            &|_| {},
        )
    }

    /// Search the chunks `scope` may read. Blocks while the model loads on first use.
    pub fn search(
        &self,
        query: &str,
        scope: &Scope,
        limit: usize,
        min_score: Option<f32>,
    ) -> Result<Vec<Hit>> {
        if query.trim().is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let vector = self
            .embedder()?
            .embed(&[query])?
            .into_iter()
            .next()
            .ok_or_else(|| Error::Embed("no vector for the query".into()))?;
        self.store()?.search(scope, vector, limit, min_score)
    }

    /// When the last run ended and what it did.
    pub fn last_run(&self) -> Option<LastRun> {
        lock(&self.catalog).last_run().cloned()
    }

    /// Catalog totals, for one scope or all.
    pub fn stats(&self, scope: Option<&Scope>) -> CatalogStats {
        lock(&self.catalog).stats(scope)
    }

    /// Ingest `inputs`, calling `observer` with each file's report as it is decided. Blocks
    /// until every file is stored or reported.
    pub fn ingest(
        &self,
        inputs: Vec<Input>,
        scope: &Scope,
        observer: &(dyn Fn(&FileReport) + Sync),
    ) -> Result<IngestReport> {
        self.ingest_until(inputs, scope, observer, &AtomicBool::new(false))
    }

    /// [`Ingestor::ingest`], ending early once `stop` is set: files not started by then are
    /// left for the next run (nothing is removed on the strength of an unfinished walk), files
    /// in flight are stored. Blocks until done.
    pub fn ingest_until(
        &self,
        inputs: Vec<Input>,
        scope: &Scope,
        observer: &(dyn Fn(&FileReport) + Sync),
        stop: &AtomicBool,
    ) -> Result<IngestReport> {
        let _one_run_at_a_time = lock(&self.run_lock);
        let started = Instant::now();
        let (report_tx, report_rx) = unbounded::<FileReport>();
        let run = Run {
            ing: self,
            scope,
            reports: Mutex::new(Some(report_tx)),
            timings: Timings::default(),
            claimed: Mutex::new(HashSet::new()),
            fatal: Mutex::new(None),
            cancelled: AtomicBool::new(false),
            stop,
            embedded: AtomicU64::new(0),
            orphaned: Mutex::new(HashMap::new()),
            pinned: Mutex::new(HashMap::new()),
            saved_at: Mutex::new((Instant::now(), Duration::ZERO)),
            containers: Mutex::new(Vec::new()),
            gate: ByteGate::new(self.config.in_flight_bytes),
        };
        let dirty = crate::repair::DirtyMarker::set(&self.config.data_dir)?;
        let cap = self.config.channel_capacity;
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
            for r in report_rx.iter() {
                observer(&r);
                report.summary.add(&r);
                report.files.push(r);
            }
        });
        // All stage threads have ended here (the scope joined them).
        if let Some(e) = lock(&run.fatal).take() {
            let _ = lock(&self.catalog).save();
            return Err(e);
        }
        self.finish_containers(&run)?;
        run.delete_orphans()?;
        if let Some(store) = lock(&self.store).as_ref() {
            store.flush();
        }
        let t = &run.timings;
        report.summary.chunks_embedded = run.embedded.load(Ordering::Relaxed);
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
            total: started.elapsed().as_secs_f64(),
        };
        {
            let mut catalog = lock(&self.catalog);
            catalog.set_last_run(LastRun {
                finished_at: now_secs(),
                summary: report.summary.clone(),
            });
            catalog.save()?;
        }
        // Store and catalog agree: nothing to repair at the next start.
        dirty.clear()?;
        Ok(report)
    }

    /// Record expanded archives and forget members that are gone. An archive is recorded as
    /// unchanged-able only when every member it produced reached the catalog.
    fn finish_containers(&self, run: &Run<'_>) -> Result<()> {
        let containers = std::mem::take(&mut *lock(&run.containers));
        for (entry, seen) in containers {
            let seen: HashSet<String> = seen.into_iter().collect();
            let members = lock(&self.catalog).members_of(run.scope, &entry.locator);
            for gone in members.iter().filter(|m| !seen.contains(&m.locator)) {
                let removed = lock(&self.catalog).remove(run.scope, &gone.locator);
                if let Some((hash, chunks)) = removed.as_ref().and_then(CatalogEntry::content) {
                    run.release(&hash, chunks)?;
                }
            }
            let complete = {
                let cat = lock(&self.catalog);
                seen.iter()
                    .filter(|m| **m != entry.locator)
                    .all(|m| cat.get(run.scope, m).is_some())
            };
            if complete {
                // A file that used to be indexed as a plain file and is now an archive.
                let replaced = {
                    let mut cat = lock(&self.catalog);
                    let old = cat
                        .get(run.scope, &entry.locator)
                        .and_then(CatalogEntry::content);
                    cat.put(run.scope, entry);
                    old
                };
                if let Some((hash, chunks)) = replaced {
                    run.release(&hash, chunks)?;
                }
            }
        }
        Ok(())
    }
}

/// What a chunk weighs in the in-flight budget: its text plus its locator and bookkeeping.
fn chunk_weight(chunk: &Chunk) -> u64 {
    (chunk.text.len() + chunk.context_ref.location.len() + 256) as u64
}

/// The path string catalog entries are compared with: canonical when it exists, else the
/// absolute path under its canonical parent (a deleted file).
fn root_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        match (absolute.parent(), absolute.file_name()) {
            (Some(parent), Some(name)) => std::fs::canonicalize(parent)
                .map(|p| p.join(name))
                .unwrap_or(absolute.clone()),
            _ => absolute,
        }
    });
    extractors::segment_from_bytes(resolved.as_os_str().as_bytes())
}

impl Run<'_> {
    /// Whether to start no new work: the run failed, or was asked to stop.
    fn halted(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst) || self.stop.load(Ordering::SeqCst)
    }

    /// Stage 1: walk inputs, answer unchanged files from the catalog, unpack the rest.
    fn walk_stage(&self, inputs: Vec<Input>, leaves: Sender<Work>, index: Sender<IndexItem>) {
        let limits = &self.ing.config.limits;
        for input in inputs {
            if self.halted() {
                return;
            }
            match input {
                Input::Bytes { name, bytes } => {
                    let locator = Locator::root(name);
                    let size = bytes.len() as u64;
                    let mut expansion = Expansion::default();
                    self.unpack_contained(&locator, || {
                        Unpacker::new(limits).expand_bytes(bytes, &locator, &mut |leaf| {
                            self.route_leaf(leaf, &locator, size, 0, &leaves, &mut expansion);
                        });
                    });
                }
                Input::Path(path) => self.sync_path(&path, &leaves, &index),
            }
        }
    }

    /// Ingest a file or folder and forget what is no longer there: catalogued files at or
    /// under `path` that the walk did not meet (deleted, renamed away) are removed, except
    /// under folders that could not be read.
    fn sync_path(&self, path: &Path, leaves: &Sender<Work>, index: &Sender<IndexItem>) {
        let exists = std::fs::symlink_metadata(path).is_ok();
        let root = root_path(path);
        let mut seen: HashSet<String> = HashSet::new();
        let mut unreadable: Vec<String> = Vec::new();
        // The index's own files are never ingested, even when it lives in the folder.
        let options = WalkOptions {
            except: std::fs::canonicalize(&self.ing.config.data_dir)
                .into_iter()
                .collect(),
            include_hidden: self.ing.config.include_hidden,
        };
        if exists {
            walk_with(path, &options, &mut |entry| match entry {
                DiskEntry::File(f) => {
                    seen.insert(f.locator.to_string());
                    self.disk_file(f, leaves, index);
                }
                DiskEntry::Skipped { locator, reason } => {
                    seen.insert(locator.to_string());
                    self.record_unread(&locator, None, FileStatus::Skipped, reason);
                }
                // Not catalogued: what was indexed under it (with --hidden) is removed.
                DiskEntry::Hidden { locator } => {
                    let reason = HIDDEN_REASON.to_string();
                    self.report(
                        &locator.to_string(),
                        FileStatus::Ignored,
                        Some(reason),
                        0,
                        None,
                    );
                }
                // Not catalogued (it may come back); what is under it is not removed.
                DiskEntry::Failed { locator, reason } => {
                    unreadable.extend(locator.segments.first().cloned());
                    self.report(
                        &locator.to_string(),
                        FileStatus::Failed,
                        Some(reason),
                        0,
                        None,
                    );
                }
            });
        }
        let gone: Vec<CatalogEntry> = lock(&self.ing.catalog)
            .top_level_under(self.scope, &root)
            .into_iter()
            .filter(|e| !seen.contains(&e.locator))
            .filter(|e| {
                let path = e
                    .locator
                    .parse::<Locator>()
                    .ok()
                    .and_then(|l| l.segments.first().cloned())
                    .unwrap_or_default();
                !unreadable
                    .iter()
                    .any(|u| path == *u || path.starts_with(&format!("{u}/")))
            })
            .collect();
        if self.halted() {
            return; // an unfinished walk proves nothing about what is gone
        }
        if !exists && gone.is_empty() {
            // Never indexed and not there: most likely a typo.
            self.report(
                &Locator::root(root).to_string(),
                FileStatus::Failed,
                Some("cannot open: no such file or folder".into()),
                0,
                None,
            );
        }
        for e in gone {
            let members = lock(&self.ing.catalog).members_of(self.scope, &e.locator);
            for m in members {
                let _ = index.send(IndexItem::Removed { locator: m.locator });
            }
            let _ = index.send(IndexItem::Removed { locator: e.locator });
        }
    }

    fn disk_file(
        &self,
        f: crate::unpack::DiskFile,
        leaves: &Sender<Work>,
        index: &Sender<IndexItem>,
    ) {
        if self.halted() {
            return;
        }
        let loc = f.locator.to_string();
        let known = lock(&self.ing.catalog).get(self.scope, &loc).cloned();
        if let Some(e) = known.filter(|e| e.size == f.size && e.mtime_ns == f.mtime_ns) {
            self.replay_unchanged(&e);
            return;
        }
        let mut expansion = Expansion::default();
        let unpacked = self.unpack_contained(&f.locator, || {
            Unpacker::new(&self.ing.config.limits).expand_file(&f.path, &f.locator, &mut |leaf| {
                self.route_leaf(leaf, &f.locator, f.size, f.mtime_ns, leaves, &mut expansion);
            });
        });
        if !unpacked || self.halted() {
            return; // members were dropped: the archive is opened again next time
        }
        if let Some((hash, reason)) = expansion.opened {
            lock(&self.containers).push((
                CatalogEntry {
                    locator: loc.clone(),
                    parent: None,
                    hash: Some(hash),
                    size: f.size,
                    mtime_ns: f.mtime_ns,
                    status: EntryStatus::Container,
                    reason: Some(reason),
                    chunks: 0,
                    shadowed: expansion.shadowed,
                },
                expansion.seen,
            ));
        } else if let Some(previous) = lock(&self.ing.catalog)
            .get(self.scope, &loc)
            .filter(|e| e.status == EntryStatus::Container)
            .cloned()
        {
            // It used to be an archive: its old members are gone.
            for m in lock(&self.ing.catalog).members_of(self.scope, &previous.locator) {
                let _ = index.send(IndexItem::Removed { locator: m.locator });
            }
        }
    }

    /// Unpack one top-level input behind a panic boundary: a decoder (zip, tar, flate2) that
    /// panics costs that input one `failed` line, not the run. Members routed before the panic
    /// keep their lines and entries; the input is recorded as failed (not as an archive), so it
    /// is opened again next run. Returns whether unpacking ended normally.
    fn unpack_contained(&self, top: &Locator, unpack: impl FnOnce()) -> bool {
        let t = Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(unpack));
        *lock(&self.timings.unpack) += t.elapsed();
        let Err(panic) = outcome else {
            return true;
        };
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        let reason = format!("unpacking panicked: {message}");
        self.record_unread(top, None, FileStatus::Failed, reason);
        false
    }

    /// Report a file (or an archive and every member of it) whose size and mtime did not
    /// change.
    fn replay_unchanged(&self, e: &CatalogEntry) {
        let mut entries = vec![e.clone()];
        if e.status == EntryStatus::Container {
            entries.extend(lock(&self.ing.catalog).members_of(self.scope, &e.locator));
        }
        for s in &e.shadowed {
            self.report(
                &s.locator,
                FileStatus::Skipped,
                Some(s.reason.clone()),
                0,
                None,
            );
        }
        for m in entries {
            let status = match m.status {
                EntryStatus::Indexed | EntryStatus::Container => FileStatus::Unchanged,
                EntryStatus::Failed => FileStatus::Failed,
                EntryStatus::Skipped => FileStatus::Skipped,
            };
            self.send_report(FileReport {
                locator: m.locator.clone(),
                status,
                reason: m.reason.clone(),
                chunks: m.chunks,
                hash: m.hash.clone(),
                archive: m.status == EntryStatus::Container,
            });
        }
    }

    /// Send a file leaf to extraction (blocking while the stage is busy); record the rest
    /// and note it in `expansion`.
    fn route_leaf(
        &self,
        leaf: Leaf,
        top: &Locator,
        size: u64,
        mtime_ns: u64,
        leaves: &Sender<Work>,
        expansion: &mut Expansion,
    ) {
        let Expansion {
            seen,
            opened,
            shadowed,
        } = expansion;
        let top_str = top.to_string();
        let parent_of = |l: &Locator| (l != top).then(|| top_str.clone());
        match leaf {
            Leaf::File {
                locator,
                bytes,
                detected,
            } => {
                seen.push(locator.to_string());
                let is_top = &locator == top;
                let weight = bytes.len() as u64;
                let permit = timed(&self.timings.unpack_blocked, || self.gate.acquire(weight));
                let work = Work {
                    permit,
                    parent: parent_of(&locator),
                    size: if is_top { size } else { bytes.len() as u64 },
                    mtime_ns: if is_top { mtime_ns } else { 0 },
                    locator,
                    bytes,
                    detected,
                };
                timed(&self.timings.unpack_blocked, || {
                    let _ = leaves.send(work);
                });
            }
            Leaf::Skipped { locator, reason } => {
                seen.push(locator.to_string());
                self.record_unread(
                    &locator,
                    parent_of(&locator).as_deref(),
                    FileStatus::Skipped,
                    reason,
                );
            }
            Leaf::Failed { locator, reason } => {
                seen.push(locator.to_string());
                self.record_unread(
                    &locator,
                    parent_of(&locator).as_deref(),
                    FileStatus::Failed,
                    reason,
                );
            }
            Leaf::Shadowed { locator, reason } => {
                // Its locator names an earlier member: reported, not catalogued.
                let locator = locator.to_string();
                self.report(&locator, FileStatus::Skipped, Some(reason.clone()), 0, None);
                shadowed.push(ShadowedMember { locator, reason });
            }
            Leaf::Container {
                locator,
                members,
                hash,
            } => {
                let loc = locator.to_string();
                seen.push(loc.clone());
                let reason = format!("archive: {members} members");
                // The same archive as last time: its members said whether they changed.
                let same = lock(&self.ing.catalog)
                    .get(self.scope, &loc)
                    .is_some_and(|e| {
                        e.status == EntryStatus::Container && e.hash.as_deref() == Some(&hash)
                    });
                if &locator == top {
                    // Recorded when the run ends, if all its members made it.
                    *opened = Some((hash.clone(), reason.clone()));
                } else {
                    self.record_without_content(
                        &loc,
                        Some(&top_str),
                        EntryStatus::Container,
                        &reason,
                        Some(&hash),
                    );
                }
                self.send_report(FileReport {
                    locator: loc,
                    status: if same {
                        FileStatus::Unchanged
                    } else {
                        FileStatus::Indexed
                    },
                    reason: Some(reason),
                    chunks: 0,
                    hash: Some(hash),
                    archive: true,
                });
            }
        }
    }

    /// Stage 2 (rayon): hash, skip unchanged, extract, chunk.
    fn extract_stage(&self, leaves: Receiver<Work>, index: Sender<Gated>) {
        let threads = match self.ing.config.extract_threads {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        };
        let pool = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
            Ok(p) => p,
            Err(e) => return self.fail_run(Error::Pipeline(format!("thread pool: {e}"))),
        };
        pool.install(|| {
            leaves.iter().par_bridge().for_each(|work| {
                if !self.halted() {
                    self.extract_one(work, &index);
                }
            });
        });
    }

    fn extract_one(&self, work: Work, index: &Sender<Gated>) {
        let loc = work.locator.to_string();
        let hash = blake3::hash(&work.bytes).to_hex().to_string();
        let known = lock(&self.ing.catalog).get(self.scope, &loc).cloned();
        let previous = known
            .as_ref()
            .and_then(CatalogEntry::content)
            .filter(|(h, _)| h != &hash);
        if let Some(e) = known
            .as_ref()
            .filter(|e| e.hash.as_deref() == Some(&hash) && e.status == EntryStatus::Indexed)
        {
            // Same bytes: refresh size/mtime so the next run can skip without reading.
            let mut fresh = e.clone();
            fresh.size = work.size;
            fresh.mtime_ns = work.mtime_ns;
            fresh.parent = work.parent.clone();
            let chunks = fresh.chunks;
            lock(&self.ing.catalog).put(self.scope, fresh);
            self.report(&loc, FileStatus::Unchanged, None, chunks, Some(hash));
            return;
        }
        let meta = FileMeta {
            locator: loc.clone(),
            parent: work.parent.clone(),
            hash: hash.clone(),
            size: work.size,
            mtime_ns: work.mtime_ns,
            previous,
        };
        // Pinned before looking: the store stage may release the last holder meanwhile, and
        // must not delete content this file is about to share.
        self.pin(&hash);
        let already_indexed = !lock(&self.ing.catalog)
            .locators_with_hash(self.scope, &hash)
            .is_empty();
        let newly_claimed = !already_indexed && lock(&self.claimed).insert(hash.clone());
        if !newly_claimed {
            // Pinned until the store stage records it.
            let _ = index.send((IndexItem::Duplicate { meta }, None));
            return;
        }
        // Claimed now: the claim protects it.
        self.unpin(&hash);
        let extracted = timed(&self.timings.extract, || {
            let input = ExtractInput {
                bytes: &work.bytes,
                locator: &work.locator,
                file_hash: &hash,
                detected: &work.detected,
            };
            // Errors, panics, aborts and hangs of a parser are all this file's failure.
            self.ing.extractor.extract(&input)
        });
        let extraction = match extracted {
            Ok(x) => x,
            Err(e) => {
                let reason = e.to_string();
                lock(&self.claimed).remove(&hash);
                self.record_failed_content(&meta, &reason);
                let _ = index.send((IndexItem::Abandoned { hash, reason }, None));
                return;
            }
        };
        let chunker = match self.ing.embedder() {
            Ok(e) => Chunker::new(e.tokenizer().clone(), &self.ing.config.chunking),
            Err(e) => return self.fail_run(e),
        };
        let max_chunks = self.ing.config.chunking.max_file_chunks;
        let chunked = timed(&self.timings.chunk, || {
            chunker.chunk_objects_limited(&extraction.objects, max_chunks)
        });
        let chunks = match chunked {
            Ok(chunks) => chunks,
            Err(too_many) => {
                // Refused before anything is embedded: a limit, like an archive's.
                let reason = too_many.to_string();
                lock(&self.claimed).remove(&hash);
                self.record_unindexed_content(&meta, FileStatus::Skipped, &reason);
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
        // From here on the file weighs what its chunks hold, not its bytes.
        let Work { bytes, permit, .. } = work;
        drop(bytes);
        let mut permit = permit;
        permit.resize(chunks.iter().map(chunk_weight).sum());
        let item = IndexItem::Content {
            meta,
            chunks,
            content_index: Box::new(content_index),
        };
        let _ = index.send((item, Some(permit)));
    }

    fn record_failed_content(&self, meta: &FileMeta, reason: &str) {
        self.record_unindexed_content(meta, FileStatus::Failed, reason);
    }

    /// Record a file whose content was not indexed (failed, or skipped by a limit).
    fn record_unindexed_content(&self, meta: &FileMeta, status: FileStatus, reason: &str) {
        let entry_status = if status == FileStatus::Skipped {
            EntryStatus::Skipped
        } else {
            EntryStatus::Failed
        };
        lock(&self.ing.catalog).put(
            self.scope,
            CatalogEntry {
                locator: meta.locator.clone(),
                parent: meta.parent.clone(),
                hash: Some(meta.hash.clone()),
                size: meta.size,
                mtime_ns: meta.mtime_ns,
                status: entry_status,
                reason: Some(reason.to_string()),
                chunks: 0,
                shadowed: Vec::new(),
            },
        );
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

    /// Stage 3: embed chunks in batches across files.
    fn embed_stage(&self, items: Receiver<IndexItem>, store: Sender<StoreItem>) {
        use crate::batcher::Batcher;
        let batch_size = self.ing.config.embed_batch;
        let mut batcher: Batcher<StoredChunk, FileMeta> = Batcher::new(batch_size);

        // Embed and send every ready batch, then the files they completed; false once the
        // run cannot go on.
        let flush = |batcher: &mut Batcher<StoredChunk, FileMeta>, all: bool| -> bool {
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
            for (meta, n) in batcher.completed() {
                let chunks = u32::try_from(n).unwrap_or(u32::MAX);
                if store.send(StoreItem::FileStored { meta, chunks }).is_err() {
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
                    content_index,
                } => {
                    if let Err(e) =
                        lock(&self.ing.catalog).write_content_index(&meta.hash, &content_index)
                    {
                        tracing::warn!("content index for {}: {e}", meta.locator);
                    }
                    let stored: Vec<StoredChunk> = chunks
                        .into_iter()
                        .map(|chunk| StoredChunk {
                            chunk,
                            vector: Vec::new(),
                            content_hash: meta.hash.clone(),
                            locators: vec![meta.locator.clone()],
                        })
                        .collect();
                    batcher.push(meta, stored);
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

    /// Stage 4: upsert points, then record files and resolve duplicates.
    fn store_stage(&self, items: Receiver<StoreItem>) {
        /// Closes the report channel when the store stage ends, even by a panic.
        struct CloseReports<'r>(&'r Mutex<Option<Sender<FileReport>>>);
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
                StoreItem::FileStored { meta, chunks } => {
                    let hash = meta.hash.clone();
                    self.file_stored(meta, chunks)?;
                    lock(&self.claimed).remove(&hash);
                    for dup in waiting_dups.remove(&hash).unwrap_or_default() {
                        self.duplicate_stored(dup)?;
                    }
                    Ok(())
                }
                StoreItem::Other(IndexItem::Duplicate { meta }) => {
                    self.unpin(&meta.hash);
                    let indexed = !lock(&self.ing.catalog)
                        .locators_with_hash(self.scope, &meta.hash)
                        .is_empty()
                        || lock(&self.orphaned).contains_key(&meta.hash);
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
                    let removed = lock(&self.ing.catalog).remove(self.scope, &locator);
                    if let Some(e) = &removed {
                        self.send_report(FileReport {
                            locator: locator.clone(),
                            status: FileStatus::Removed,
                            reason: None,
                            chunks: 0,
                            hash: e.hash.clone(),
                            archive: e.status == EntryStatus::Container,
                        });
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

    fn put_indexed(&self, meta: &FileMeta, chunks: u32) {
        lock(&self.ing.catalog).put(
            self.scope,
            CatalogEntry {
                locator: meta.locator.clone(),
                parent: meta.parent.clone(),
                hash: Some(meta.hash.clone()),
                size: meta.size,
                mtime_ns: meta.mtime_ns,
                status: EntryStatus::Indexed,
                reason: None,
                chunks,
                shadowed: Vec::new(),
            },
        );
    }

    /// All chunks of a new content are stored: record the file, retire what it replaced.
    fn file_stored(&self, meta: FileMeta, chunks: u32) -> Result<()> {
        self.put_indexed(&meta, chunks);
        if let Some((hash, old_chunks)) = &meta.previous {
            self.release(hash, *old_chunks)?;
        }
        self.report(
            &meta.locator,
            FileStatus::Indexed,
            None,
            chunks,
            Some(meta.hash),
        );
        Ok(())
    }

    /// A file whose bytes are already indexed under another locator: add it to their locators.
    fn duplicate_stored(&self, meta: FileMeta) -> Result<()> {
        let (original, chunks) = {
            let cat = lock(&self.ing.catalog);
            let locs = cat.locators_with_hash(self.scope, &meta.hash);
            let chunks = locs
                .first()
                .and_then(|l| cat.get(self.scope, l))
                .map(|e| e.chunks);
            (locs.first().cloned(), chunks)
        };
        // Adopt an orphaned content (the file that held it moved or changed in this run).
        let adopted = lock(&self.orphaned).remove(&meta.hash);
        let chunks = chunks.or(adopted).unwrap_or(0);
        self.put_indexed(&meta, chunks);
        let all = lock(&self.ing.catalog).locators_with_hash(self.scope, &meta.hash);
        if chunks > 0 {
            self.ing
                .store()?
                .set_locators(self.scope, &meta.hash, &all)?;
        }
        if let Some((hash, old_chunks)) = &meta.previous {
            self.release(hash, *old_chunks)?;
        }
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
}
