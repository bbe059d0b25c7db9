//! The [`Ingestor`]: what outlives a run (configuration, catalog and, opened on first use, the
//! embedding model and the vector index) and the entry points a caller uses: open, ingest,
//! search, repair, stats. One run of the pipeline is `crate::pipeline::run`.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use extractors::Scope;

use crate::config::Config;
use crate::embed::{find_model_dir, load_tokenizer, ChunkKind, Chunker, Embedder};
use crate::error::{Error, Result};
use crate::index::{
    Catalog, CatalogStats, EdgeIndex, Hit, IndexQuery, LastRun, SearchFilter, SearchMode,
    ServerIndex, VectorIndex,
};
use crate::lock;
use crate::report::{FileReport, IngestReport};

/// The header line's `format` in an export file.
const EXPORT_FORMAT: &str = "ingest-export";

/// Points per write when importing.
const IMPORT_BATCH: usize = 512;

/// What to ingest.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file or folder on disk.
    Path(PathBuf),
    /// One member of an archive on disk, read alone: what the agent's
    /// `extract_container_item` asks for. The archive is walked under the configured limits,
    /// except the member count (a member past `max_files` can be read this way); only
    /// `member` (a full locator such as `/d/a.zip!/docs/b.pdf`) and what it contains are
    /// extracted and catalogued, nothing is removed.
    Member {
        /// Where the archive's bytes are: the file ingested from this machine, or the copy
        /// the upload queue kept. The archive is known by `member`'s first segment.
        archive: PathBuf,
        /// The member's full locator.
        member: String,
    },
    /// Bytes from elsewhere (an upload), named by `name`.
    Bytes {
        /// The name it is known by (its locator's first segment).
        name: String,
        /// Its content.
        bytes: Vec<u8>,
    },
    /// Text from elsewhere (a workflow's tool result, entity or summary), named by `name`:
    /// indexed as plain text, or as JSON when `json`, never unpacked as a container nor
    /// typed by its bytes (a tool result holding an archive's bytes is text a tool returned,
    /// not an archive to unpack into the workflow).
    Text {
        /// The name it is known by (its locator's first segment).
        name: String,
        /// Its content.
        text: String,
        /// Whether `text` is one JSON value.
        json: bool,
    },
    /// An upload spooled to a file, known as `name` (its locator's first segment): what
    /// [`crate::Uploads`] queues. Never answered as unchanged from the catalog (an upload has
    /// no modification time); identical bytes are still found by hash and not embedded again.
    Upload {
        /// The name it is known by.
        name: String,
        /// The spooled bytes.
        path: PathBuf,
        /// Limits for this upload's container tree instead of the configured ones.
        limits: Option<crate::Limits>,
        /// User tags (`key=value`, sorted) for the file and every member of it.
        tags: Vec<String>,
    },
    /// Remove a file (an archive with all its members) from the catalog and the index.
    Remove {
        /// Its locator, as search hits and reports name it (without `#fragment`).
        locator: String,
    },
}

/// Which scopes have a run going. Runs of different scopes go at once (their catalog
/// entries and points are apart; the content indexes they share are written and deleted
/// under the catalog's lock); runs of one scope, and repair or export, go one at a time.
#[derive(Default)]
pub(crate) struct RunSlots {
    state: Mutex<SlotState>,
    freed: std::sync::Condvar,
}

#[derive(Default)]
struct SlotState {
    /// Keys of the scopes with a run going.
    busy: std::collections::HashSet<String>,
    /// A repair, export or import has the whole index.
    exclusive: bool,
    /// Set while any run goes: a crash leaves it, and the next start repairs.
    marker: Option<crate::index::DirtyMarker>,
    /// A run failed since the marker was set: the marker stays until a repair.
    failed: bool,
    /// Per scope key, the runs waiting for it, served in the order they asked (a ticket
    /// each): (next ticket, ticket served next).
    turns: std::collections::HashMap<String, (u64, u64)>,
}

/// A run's hold on its scope; ended by [`RunSlot::end`] (dropped without it: as failed).
pub(crate) struct RunSlot<'a> {
    slots: &'a RunSlots,
    key: Option<String>,
}

impl RunSlots {
    fn wait<'a>(
        &'a self,
        mut state: std::sync::MutexGuard<'a, SlotState>,
        until: impl Fn(&SlotState) -> bool,
    ) -> std::sync::MutexGuard<'a, SlotState> {
        while !until(&state) {
            state = self
                .freed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        state
    }

    /// Wait until `scope` has no run going and every run that asked for it earlier has had
    /// its turn, then hold it (marking the data dir as being written when no other run is).
    pub(crate) fn begin(&self, data_dir: &Path, scope: &Scope) -> Result<RunSlot<'_>> {
        let key = scope.key();
        let mut state = lock(&self.state);
        let ticket = {
            let turn = state.turns.entry(key.clone()).or_default();
            turn.0 += 1;
            turn.0 - 1
        };
        let mut state = self.wait(state, |s| {
            !s.exclusive
                && !s.busy.contains(&key)
                && s.turns.get(&key).is_some_and(|t| t.1 == ticket)
        });
        let turn = state.turns.entry(key.clone()).or_default();
        turn.1 += 1;
        if turn.0 == turn.1 {
            state.turns.remove(&key); // nobody else waits
        }
        let marked = match state.marker {
            Some(_) => Ok(()),
            None => crate::index::DirtyMarker::set(data_dir).map(|m| state.marker = Some(m)),
        };
        if let Err(e) = marked {
            drop(state);
            self.freed.notify_all(); // the next ticket's turn
            return Err(e);
        }
        state.busy.insert(key.clone());
        Ok(RunSlot {
            slots: self,
            key: Some(key),
        })
    }

    /// Whether a run is waiting for `scope_key` (a run holding it should end soon: see
    /// the upload runner, whose run of a scope could otherwise go on for as long as uploads
    /// keep coming).
    pub(crate) fn wanted(&self, scope_key: &str) -> bool {
        lock(&self.state)
            .turns
            .get(scope_key)
            .is_some_and(|t| t.0 > t.1)
    }

    /// Wait until no run goes, then hold the whole index until the guard drops.
    pub(crate) fn exclusive(&self) -> ExclusiveSlot<'_> {
        let mut state = self.wait(lock(&self.state), |s| !s.exclusive && s.busy.is_empty());
        state.exclusive = true;
        ExclusiveSlot(self)
    }

    /// A repair made the store and the catalog agree again.
    fn repaired(&self) {
        lock(&self.state).failed = false;
    }

    fn release(&self, key: &str, ok: bool) -> Result<()> {
        let mut state = lock(&self.state);
        state.busy.remove(key);
        state.failed |= !ok;
        let mut result = Ok(());
        if state.busy.is_empty() {
            if let Some(marker) = state.marker.take() {
                // Store and catalog agree: nothing to repair at the next start.
                if !state.failed {
                    result = marker.clear();
                }
            }
        }
        drop(state);
        self.freed.notify_all();
        result
    }
}

impl RunSlot<'_> {
    /// The run ended: `ok` if the catalog and the store agree.
    pub(crate) fn end(mut self, ok: bool) -> Result<()> {
        match self.key.take() {
            Some(key) => self.slots.release(&key, ok),
            None => Ok(()),
        }
    }
}

impl Drop for RunSlot<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let _ = self.slots.release(&key, false);
        }
    }
}

/// The whole index held by a repair, export or import.
pub(crate) struct ExclusiveSlot<'a>(&'a RunSlots);

impl Drop for ExclusiveSlot<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.exclusive = false;
        drop(state);
        self.0.freed.notify_all();
    }
}

/// The long-lived ingestion runtime: configuration, catalog, and (loaded on first use) the
/// embedding model and the vector store. `Send + Sync`: share one per process.
///
/// An ingest call waits while another one of the same scope runs (runs of different scopes
/// go at once); searches never wait. For uploads that must not block their caller, see
/// [`crate::Uploads`].
pub struct Ingestor {
    pub(crate) config: Config,
    pub(crate) catalog: Mutex<Catalog>,
    pub(crate) embedder: Mutex<Option<Arc<dyn Embedder>>>,
    /// Built from the model's tokenizer alone, so chunking never waits for the model.
    pub(crate) chunker: Mutex<Option<Arc<Chunker>>>,
    pub(crate) store: Mutex<Option<Arc<dyn VectorIndex>>>,
    /// Parses documents: a pool of isolated workers, or in-process.
    pub(crate) extractor: Box<dyn extractors::Extractor>,
    /// What every extraction gets: the OCR settings, and PDFium from the model folder when it
    /// is provisioned there (else PDF text comes from pdf-extract, ~5x slower).
    pub(crate) extract_options: extractors::ExtractOptions,
    /// The model file this index is embedded and searched with (settled when it opens).
    model_variant: crate::ModelVariant,
    pub(crate) runs: RunSlots,
    /// The workflows' records, turns and sweeps (`crate::workflow`).
    pub(crate) workflow_records: crate::workflow::WorkflowRecords,
    /// How far the current run has come ([`Ingestor::progress`]).
    pub(crate) progress: Arc<crate::RunProgress>,
}

impl std::fmt::Debug for Ingestor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ingestor")
            .field("data_dir", &self.config.data_dir)
            .finish()
    }
}

impl Ingestor {
    /// Validate `config`, create the data directory and load the catalog. The model and the
    /// store are opened on first use, so opening is cheap.
    pub fn open(config: Config) -> Result<Self> {
        Self::open_as(config, false)
    }

    /// Open the data directory to [`Ingestor::reindex`] it, with `config.model_variant`
    /// (when given) replacing the model the index records: the reindex embeds every
    /// content with it and records it.
    pub fn open_for_reindex(config: Config) -> Result<Self> {
        Self::open_as(config, true)
    }

    fn open_as(config: Config, model_change: bool) -> Result<Self> {
        config.validate()?;
        crate::perms::prepare_data_dir(&config.data_dir)?;
        let catalog = Catalog::load(&config.data_dir)?;
        // Settled before any run: a run fills the catalog before its first embedding, and an
        // index must not look like one from before the variant record then.
        let model_variant = match config.model_variant {
            Some(v) if model_change => v,
            _ => crate::records::index_variant(
                &config.data_dir,
                config.model_variant,
                !catalog.scopes().is_empty(),
            )?,
        };
        let mut config = config;
        config.server = crate::records::index_store(
            &config.data_dir,
            config.server.take(),
            !catalog.scopes().is_empty(),
        )?;
        let workflow_records = crate::workflow::WorkflowRecords::new(&config.data_dir);
        let ingestor = Ingestor {
            extractor: crate::isolation::build(&config.isolation),
            extract_options: config.extract_options(),
            model_variant,
            config,
            catalog: Mutex::new(catalog),
            embedder: Mutex::new(None),
            chunker: Mutex::new(None),
            store: Mutex::new(None),
            runs: RunSlots::default(),
            progress: Arc::default(),
            workflow_records,
        };
        match ingestor.workflows().import_legacy() {
            Ok(0) => {}
            Ok(n) => tracing::info!("moved {n} workflow records into workflows.sqlite"),
            Err(e) => tracing::warn!("workflow records of the earlier layout not moved: {e}"),
        }
        if crate::index::DirtyMarker::present(&ingestor.config.data_dir) {
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

    /// The data directory.
    pub(crate) fn data_dir(&self) -> &Path {
        &self.config.data_dir
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The model this index is embedded and searched with.
    pub fn model_variant(&self) -> crate::ModelVariant {
        self.model_variant
    }

    /// Make the catalog and the store agree (after a run that did not finish; see
    /// [`crate::RepairReport`]). Blocks while an ingest runs.
    pub fn repair(&self) -> Result<crate::RepairReport> {
        let _whole_index = self.runs.exclusive();
        let store = self.store()?;
        let report = crate::index::repair(&mut lock(&self.catalog), &*store)?;
        crate::index::DirtyMarker::set(&self.config.data_dir)?.clear()?;
        self.runs.repaired();
        Ok(report)
    }

    /// The chunker (the model's tokenizer and the chunking settings), built on first call and
    /// shared by every extraction thread.
    pub(crate) fn chunker(&self) -> Result<Arc<Chunker>> {
        let mut slot = lock(&self.chunker);
        if let Some(c) = slot.as_ref() {
            return Ok(Arc::clone(c));
        }
        let dir = find_model_dir(self.config.model_dir.as_deref())?;
        let variant = self.model_variant;
        let tokenizer = load_tokenizer(&variant.tokenizer_dir(&dir))?;
        let c = Arc::new(Chunker::new(
            tokenizer,
            &self.config.chunking,
            variant.window_tokens(),
        ));
        *slot = Some(Arc::clone(&c));
        Ok(c)
    }

    /// The embedding model, loaded on first call.
    pub(crate) fn embedder(&self) -> Result<Arc<dyn Embedder>> {
        let mut slot = lock(&self.embedder);
        if let Some(e) = slot.as_ref() {
            return Ok(Arc::clone(e));
        }
        let dir = find_model_dir(self.config.model_dir.as_deref())?;
        let e = crate::embed::load_embedder(&dir, self.model_variant, self.config.embed_batch)?;
        *slot = Some(Arc::clone(&e));
        Ok(e)
    }

    /// Open the vector index now instead of on first use (a daemon takes it when it starts,
    /// so that a second writer fails at once rather than mid-run).
    pub fn open_index(&self) -> Result<()> {
        self.store().map(drop)
    }

    /// Load the embedding model now instead of at the first search or ingest (a long-lived
    /// process does this at start, so its first search is as fast as the others).
    pub fn load_model(&self) -> Result<()> {
        self.embedder().map(drop)
    }

    /// The vector index, opened on first call.
    pub(crate) fn store(&self) -> Result<Arc<dyn VectorIndex>> {
        let mut slot = lock(&self.store);
        if let Some(s) = slot.as_ref() {
            return Ok(Arc::clone(s));
        }
        let s: Arc<dyn VectorIndex> = match &self.config.server {
            None => Arc::new(EdgeIndex::open(&self.config.data_dir)?),
            Some(server) => Arc::new(ServerIndex::open(
                server,
                &crate::records::node_name(&self.config.data_dir)?,
            )?),
        };
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
        self.search_filtered(
            query,
            scope,
            limit,
            min_score,
            &SearchFilter::default(),
            SearchMode::default(),
        )
    }

    /// Search the chunks `scope` may read that `filter` lets through (under a locator, of a
    /// type, on pages, in a section, sheet or slide), best first, ranked as `mode` says, each
    /// locator once. A hit's `score` is its relevance: the cosine similarity to the query
    /// (`dense`, and `hybrid`, whose fused ranking orders the hits), the BM25 score
    /// (`keyword`); `min_score` leaves out hits below it ([`Ingestor::relevance_floor`] is
    /// the floor the faces apply when a caller gives none). Blocks while the model loads on
    /// first use (keyword searches never load it).
    pub fn search_filtered(
        &self,
        query: &str,
        scope: &Scope,
        limit: usize,
        min_score: Option<f32>,
        filter: &SearchFilter,
        mode: SearchMode,
    ) -> Result<Vec<Hit>> {
        crate::access::check_scope(scope).map_err(Error::Scope)?;
        if query.trim().is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let vector = self.query_vector(query, mode)?;
        self.search_embedded(query, vector, scope, limit, min_score, filter, mode)
    }

    /// How far the current run has come: files and bytes found and read, chunks known and
    /// embedded, the file being embedded. Read it from another thread while `ingest` runs
    /// (the CLI's progress line does).
    pub fn progress(&self) -> Arc<crate::RunProgress> {
        Arc::clone(&self.progress)
    }

    /// The relevance below which a hit of `mode` is taken as unrelated to the query: the
    /// cosine floor measured for this index's model (docs/EVALUATION.md, "Nothing
    /// relevant"), or `None` (keyword searches: BM25 scores are not comparable between
    /// indexes; a model without a measured floor). The tools, the HTTP service and the CLI
    /// apply it when a search gives no `min_score`.
    pub fn relevance_floor(&self, mode: SearchMode) -> Option<f32> {
        mode.uses_embedding()
            .then(|| self.model_variant.relevance_floor())
            .flatten()
    }

    /// The query's embedding when `mode` ranks by meaning (loading the model on first use); a
    /// query longer than [`crate::MAX_QUERY_BYTES`] is refused, an empty one has none.
    pub(crate) fn query_vector(&self, query: &str, mode: SearchMode) -> Result<Option<Vec<f32>>> {
        if query.len() > crate::MAX_QUERY_BYTES {
            return Err(Error::Request(format!(
                "the query is {} bytes; at most {} are searched (the model reads 256 tokens)",
                query.len(),
                crate::MAX_QUERY_BYTES
            )));
        }
        if mode.uses_embedding() && !query.trim().is_empty() {
            Ok(Some(self.embedder()?.embed_query(query)?))
        } else {
            Ok(None)
        }
    }

    /// [`Ingestor::search_filtered`] with the query already embedded ([`Ingestor::query_vector`]):
    /// several searches of one query embed it once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search_embedded(
        &self,
        query: &str,
        vector: Option<Vec<f32>>,
        scope: &Scope,
        limit: usize,
        min_score: Option<f32>,
        filter: &SearchFilter,
        mode: SearchMode,
    ) -> Result<Vec<Hit>> {
        crate::access::check_scope(scope).map_err(Error::Scope)?;
        if query.trim().is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let index_query = IndexQuery {
            vector,
            text: (mode != SearchMode::Dense).then(|| query.to_string()),
        };
        let store = self.store()?;
        // A page's other chunks share its locator: fetched beyond `limit` so that, each
        // locator once, `limit` hits are still there.
        let wanted = limit.saturating_mul(2).max(limit.saturating_add(10));
        let mut hits = store.search(scope, &index_query, wanted, 0, min_score, filter)?;
        // A query that is a file's name finds that file's card first, however common the
        // words of the name are elsewhere.
        if let Some(name) = file_name_in(query).filter(|_| filter.kind != Some(ChunkKind::Passage))
        {
            let named = SearchFilter {
                kind: Some(ChunkKind::Card),
                file_name: Some(name.to_string()),
                ..filter.clone()
            };
            let first = store.search(scope, &index_query, limit, 0, min_score, &named)?;
            if !first.is_empty() {
                hits.retain(|h| !first.iter().any(|f| f.chunk_id == h.chunk_id));
                hits.splice(0..0, first);
            }
        }
        // No locator twice in one answer: the first (best) hit of each stands for it.
        let mut seen = std::collections::HashSet::new();
        hits.retain(|h| seen.insert((h.owner.key(), h.locator.clone())));
        hits.truncate(limit);
        Ok(hits)
    }

    /// Write every point of the index (id, dense vector, payload) to `out` as JSON lines, in
    /// no particular order: what [`Ingestor::import`] reads to move the index to another
    /// store without embedding. Returns the number of points.
    pub fn export(&self, out: &mut dyn std::io::Write) -> Result<u64> {
        let _whole_index = self.runs.exclusive();
        let header = serde_json::json!({
            "format": EXPORT_FORMAT,
            "version": 1,
            "model_variant": self.model_variant.name(),
        });
        writeln!(out, "{header}").map_err(|e| Error::io("export", e))?;
        let mut written = 0u64;
        let mut failed = None;
        self.store()?.export_points(&mut |p| {
            if failed.is_some() {
                return;
            }
            let line = serde_json::to_writer(&mut *out, &p).map_err(std::io::Error::from);
            match line.and_then(|()| out.write_all(b"\n")) {
                Ok(()) => written += 1,
                Err(e) => failed = Some(e),
            }
        })?;
        match failed {
            Some(e) => Err(Error::io("export", e)),
            None => Ok(written),
        }
    }

    /// Move an index into the store `config` names (`config.server`; none: the store the
    /// data dir records, the embedded shard for a new one): add the points of an
    /// [`Ingestor::export`] read from `input` (nothing is embedded: vectors come with them)
    /// and record that `config.data_dir`'s catalog now describes that store, so the next
    /// sync skips what is unchanged. Idempotent: importing the same points again rewrites
    /// the same ids. Returns the number of points.
    pub fn import(mut config: Config, input: &mut dyn std::io::BufRead) -> Result<u64> {
        let mut first = String::new();
        input
            .read_line(&mut first)
            .map_err(|e| Error::io("import", e))?;
        let header: serde_json::Value = serde_json::from_str(&first).unwrap_or_default();
        if header.get("format").and_then(|f| f.as_str()) != Some(EXPORT_FORMAT) {
            return Err(Error::Import(
                "not a file written by `ingest export` (no header line)".into(),
            ));
        }
        // The vectors are this model's: the index must be searched with it.
        let variant = header
            .get("model_variant")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .parse::<crate::ModelVariant>()
            .map_err(|e| Error::Import(e.to_string()))?;
        if config.model_variant.is_some_and(|v| v != variant) {
            return Err(Error::Import(format!(
                "the points were embedded with model variant {variant}, not the one asked for"
            )));
        }
        config.model_variant = Some(variant);
        config.validate()?;
        crate::perms::prepare_data_dir(&config.data_dir)?;
        // A store given moves the index there; none keeps the recorded one (or, for a new
        // data dir, the embedded shard).
        if let Some(server) = &config.server {
            crate::records::record_store(&config.data_dir, Some(server))?;
        }
        let ingestor = Ingestor::open(config)?;
        let _whole_index = ingestor.runs.exclusive();
        let store = ingestor.store()?;
        let mut batch = Vec::with_capacity(IMPORT_BATCH);
        let mut imported = 0u64;
        for (n, line) in std::io::BufRead::lines(&mut *input).enumerate() {
            let line = line.map_err(|e| Error::io("import", e))?;
            let n = n + 1; // after the header
            if line.trim().is_empty() {
                continue;
            }
            let point: crate::ExportedPoint = serde_json::from_str(&line).map_err(|e| {
                Error::Import(format!("line {}: not an exported point: {e}", n + 1))
            })?;
            if point.vector.len() != crate::embed::DIMENSIONS {
                return Err(Error::Config(format!(
                    "import line {}: a vector of {} dimensions, the model's have {}",
                    n + 1,
                    point.vector.len(),
                    crate::embed::DIMENSIONS
                )));
            }
            batch.push(point);
            if batch.len() == IMPORT_BATCH {
                store.import_points(&batch)?;
                imported += batch.len() as u64;
                batch.clear();
            }
        }
        store.import_points(&batch)?;
        imported += batch.len() as u64;
        store.flush();
        store.optimize()?;
        Ok(imported)
    }

    /// When the last run ended and what it did.
    pub fn last_run(&self) -> Option<LastRun> {
        lock(&self.catalog).last_run()
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
        self.run_inputs(Box::new(inputs.into_iter()), scope, &observer, stop, true)
    }

    /// One pipeline run over `inputs` (a list, or a feed), once `scope` has no other run
    /// going.
    pub(crate) fn run_inputs(
        &self,
        inputs: crate::pipeline::Inputs<'_>,
        scope: &Scope,
        progress: &dyn crate::pipeline::RunObserver,
        stop: &AtomicBool,
        keep_lines: bool,
    ) -> Result<IngestReport> {
        crate::access::check_scope(scope).map_err(Error::Scope)?;
        let slot = self.runs.begin(&self.config.data_dir, scope)?;
        let report = crate::pipeline::run(self, inputs, scope, progress, stop, keep_lines);
        slot.end(report.is_ok())?;
        report
    }
}

/// The file name a query is, if it looks like one: ending in an extension of one to five
/// letters or digits (`path.json`, `IMG_2043.JPG`, `Übersicht Griechisch.pdf`), without a
/// path. A question that merely ends in a name matches no file by it and changes nothing.
fn file_name_in(query: &str) -> Option<&str> {
    let q = query.trim();
    let (stem, ext) = q.rsplit_once('.')?;
    let is_name = !stem.trim().is_empty()
        && (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && !q.contains(['/', '!', '#', '?']);
    is_name.then_some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PDFium provisioned in the model folder reaches every extraction (absolute: workers
    /// load it); a model folder without it leaves PDF text to pdf-extract.
    #[test]
    fn pdfium_in_the_model_folder_reaches_the_extractors() {
        let dir = tempfile::tempdir().unwrap();
        let ingestor = Ingestor::open(Config::new(dir.path().join("data"))).unwrap();
        let lib = ingestor
            .extract_options
            .pdfium_library
            .clone()
            .expect("libpdfium.so in the model folder: run `make models`");
        assert!(
            lib.is_absolute() && lib.ends_with("libpdfium.so"),
            "{lib:?}"
        );

        let bare = dir.path().join("bare-model");
        std::fs::create_dir_all(&bare).unwrap();
        let model = find_model_dir(None).unwrap();
        for f in std::fs::read_dir(&model).unwrap() {
            let f = f.unwrap().path();
            if f.file_name().is_some_and(|n| n != "libpdfium.so") {
                std::os::unix::fs::symlink(&f, bare.join(f.file_name().unwrap())).unwrap();
            }
        }
        let mut config = Config::new(dir.path().join("data2"));
        config.model_dir = Some(bare);
        let ingestor = Ingestor::open(config).unwrap();
        assert_eq!(ingestor.extract_options.pdfium_library, None);
    }
}
