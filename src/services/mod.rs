//! [`Services`]: what every part of the core works with, handed to the pipeline, the upload
//! queue, the workflows and the tools: the configuration, the data directory
//! ([`DataDir`]), the catalog (through its interface, [`Catalog`]), the chunker, the
//! embedding model and the vector index (opened on first use), the extractor pool and the
//! run slots. It knows nothing of what uses it: the pipeline (`crate::pipeline`) runs on a
//! `&Services`, and [`crate::Ingestor`], the facade a caller opens, is a `Services` plus the
//! workflows' records.

use std::path::Path;
use std::sync::{Arc, Mutex};

use extractors::Scope;

use crate::config::Config;
use crate::embed::{find_model_dir, load_tokenizer, Chunker, Embedder};
use crate::error::{Error, Result};
use crate::index::{
    Catalog, CatalogStats, EdgeIndex, LastRun, PgCatalog, ServerIndex, SqliteCatalog, StoredChunk,
    VectorIndex,
};
use crate::lock;
use crate::run_slots::RunSlots;
use crate::DataDir;

/// How long an index seen without chunks in other languages is taken to have none (another
/// node, or a daemon's upload, may add some meanwhile).
const MULTILINGUAL_RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// A question's embeddings: by the index model, and by the multilingual model when the index
/// holds chunks in other languages ([`Services::query_vector`]).
#[derive(Debug, Clone)]
pub(crate) struct QueryVectors {
    /// By the index model.
    pub(crate) vector: Vec<f32>,
    /// By the multilingual model, when the index holds chunks with such vectors.
    pub(crate) multilingual: Option<Vec<f32>>,
}

/// The header line's `format` in an export file.
pub(crate) const EXPORT_FORMAT: &str = "ingest-export";

/// See the module documentation. `Send + Sync`: one per process and data directory.
pub struct Services {
    config: Config,
    /// The data directory `config` names.
    data: DataDir,
    /// What the index holds, file by file: only through [`Services::catalog`].
    catalog: Box<dyn Catalog>,
    embedder: Mutex<Option<Arc<dyn Embedder>>>,
    /// The multilingual model, loaded when the first chunk in another language or the first
    /// question to an index holding such chunks needs it ([`Services::multilingual_embedder`]).
    multilingual_embedder: Mutex<Option<Arc<dyn Embedder>>>,
    /// Whether the index was last seen holding chunks with a multilingual vector, and when.
    multilingual_points: Mutex<Option<(bool, std::time::Instant)>>,
    /// Built from the model's tokenizer alone, so chunking never waits for the model.
    chunker: Mutex<Option<Arc<Chunker>>>,
    store: Mutex<Option<Arc<dyn VectorIndex>>>,
    /// Parses documents: a pool of isolated workers, or in-process.
    extractor: Box<dyn extractors::Extractor>,
    /// What every extraction gets: the OCR settings, and PDFium from the model folder when it
    /// is provisioned there (else PDF text comes from pdf-extract, ~5x slower).
    extract_options: extractors::ExtractOptions,
    /// The model file this index is embedded and searched with (settled when it opens).
    model_variant: crate::ModelVariant,
    runs: RunSlots,
    /// Where uploaded archives are kept for extraction on demand, when not in the data
    /// directory: the shared spool's `kept/` folder, set by the upload queue of a node that
    /// shares its catalog (so that every node extracts from what any node kept).
    kept_root: std::sync::OnceLock<std::path::PathBuf>,
    /// How far the current run has come ([`Services::progress`]).
    progress: Arc<crate::RunProgress>,
}

/// Models a handle is built with in place of the provisioned ones (the unit tests' fake
/// model); what is not given is loaded on first use as usual.
#[derive(Default)]
pub(crate) struct GivenModels {
    pub(crate) chunker: Option<Arc<Chunker>>,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
}

mod search;

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("data_dir", &self.data)
            .finish()
    }
}

impl Services {
    /// Validate `config`, create the data directory and open the catalog (the model and the
    /// store are opened on first use, so opening is cheap); repair the index when the last
    /// run did not finish. With `model_change`, `config.model_variant` (when given) replaces
    /// the model the index records (a reindex embeds every content with it).
    /// `models` (the unit tests' fake model) stand in for the provisioned ones; the
    /// default loads those on first use.
    pub(crate) fn open(config: Config, model_change: bool, models: GivenModels) -> Result<Self> {
        config.validate()?;
        let data = DataDir::at(&config.data_dir);
        data.prepare()?;
        let catalog: Box<dyn Catalog> = match &config.catalog {
            None => Box::new(SqliteCatalog::open(data.root())?),
            Some(url) => Box::new(PgCatalog::open(url, data.root())?),
        };
        // Settled before any run: a run fills the catalog before its first embedding, and an
        // index must not look like one from before the variant record then. A shared catalog
        // holds other nodes' content: this data dir's records alone speak for it.
        let has_content = records_predate(&config, catalog.as_ref());
        let mut config = config;
        if config.catalog.is_some() {
            // A shared catalog's first node says what its index is made with; the others
            // follow (a model given otherwise is refused), before their own records are
            // written, so a node refused once is not left with a wrong record.
            // The collection, not the address: nodes of a cluster each talk to a peer.
            let store = config.server.as_ref().map_or_else(
                || crate::records::store_name(None),
                |s| format!("qdrant collection {}", s.collection),
            );
            crate::records::agree_with_catalog(catalog.as_ref(), "store", &store)?;
            let model = config.model_variant.unwrap_or_default();
            crate::records::agree_with_catalog(catalog.as_ref(), "model", model.name()).or_else(
                |refused| match config.model_variant {
                    Some(_) => Err(refused),
                    None => catalog
                        .record_once("model", model.name())?
                        .parse()
                        .map(|recorded| config.model_variant = Some(recorded))
                        .map_err(|e| Error::Config(format!("the shared catalog's model: {e}"))),
                },
            )?;
        }
        let model_variant = match config.model_variant {
            Some(v) if model_change => v,
            _ => crate::records::index_variant(data.root(), config.model_variant, has_content)?,
        };
        config.server =
            crate::records::index_store(data.root(), config.server.take(), has_content)?;
        let services = Services {
            extractor: crate::isolation::build(&config.isolation),
            extract_options: config.extract_options(),
            model_variant,
            config,
            data,
            catalog,
            embedder: Mutex::new(models.embedder),
            multilingual_embedder: Mutex::new(None),
            multilingual_points: Mutex::new(None),
            chunker: Mutex::new(models.chunker),
            store: Mutex::new(None),
            runs: RunSlots::default(),
            kept_root: std::sync::OnceLock::new(),
            progress: Arc::default(),
        };
        if crate::index::DirtyMarker::present(services.data.root()) {
            let report = services.repair()?;
            tracing::warn!(
                "the previous run did not finish; repaired the index: {} entries to index again, {} stale contents deleted, {} locator lists fixed",
                report.entries_forgotten,
                report.stale_contents_deleted,
                report.locators_fixed
            );
        }
        Ok(services)
    }

    /// Whether this data dir's records (model variant, recipe, store) may predate its
    /// content: see [`records_predate`].
    pub(crate) fn records_may_predate_content(&self) -> bool {
        records_predate(&self.config, self.catalog())
    }

    /// The catalog: every caller's one way to it.
    pub(crate) fn catalog(&self) -> &dyn Catalog {
        &*self.catalog
    }

    /// What parses documents: the pool of isolated workers, or in-process.
    pub(crate) fn extractor(&self) -> &dyn extractors::Extractor {
        self.extractor.as_ref()
    }

    /// What every extraction gets (OCR settings, PDFium).
    pub(crate) fn extract_options(&self) -> &extractors::ExtractOptions {
        &self.extract_options
    }

    /// The run slots: one run per scope, the whole index for a reindex.
    pub(crate) fn runs(&self) -> &RunSlots {
        &self.runs
    }

    /// The store, when a run or a search has opened it (nothing is opened here).
    pub(crate) fn opened_store(&self) -> Option<Arc<dyn VectorIndex>> {
        lock(&self.store).clone()
    }

    /// The data directory.
    pub(crate) fn data_dir(&self) -> &Path {
        self.data.root()
    }

    /// The folder of uploaded archives kept for extraction on demand: the data directory's,
    /// or the shared spool's once a node's upload queue sharing its catalog set it.
    pub(crate) fn kept_root(&self) -> std::path::PathBuf {
        self.kept_root
            .get()
            .cloned()
            .unwrap_or_else(|| self.data.kept_uploads())
    }

    /// Keep uploaded archives in `dir` (a shared spool's folder) instead of the data
    /// directory; only the first call counts.
    pub(crate) fn keep_archives_in(&self, dir: std::path::PathBuf) {
        let _ = self.kept_root.set(dir);
    }

    /// The data directory: where each of its parts lies.
    pub(crate) fn data(&self) -> &crate::DataDir {
        &self.data
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
        let report = crate::index::repair(self.catalog(), &*store)?;
        crate::index::DirtyMarker::set(self.data.root())?.clear()?;
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

    /// Whether chunks in other languages get a multilingual vector and questions are
    /// embedded by the multilingual model too ([`Config::multilingual`]; never when the index
    /// model is that model).
    pub(crate) fn multilingual_on(&self) -> bool {
        self.config.multilingual && self.model_variant != crate::ModelVariant::MultilingualE5Small
    }

    /// The multilingual model (multilingual-e5-small, from the folder beside the index
    /// model's), loaded on first call; `None` when [`Services::multilingual_on`] is off.
    pub(crate) fn multilingual_embedder(&self) -> Result<Option<Arc<dyn Embedder>>> {
        if !self.multilingual_on() {
            return Ok(None);
        }
        let mut slot = lock(&self.multilingual_embedder);
        if let Some(e) = slot.as_ref() {
            return Ok(Some(Arc::clone(e)));
        }
        let dir = find_model_dir(self.config.model_dir.as_deref())?;
        let e = crate::embed::load_embedder(
            &dir,
            crate::ModelVariant::MultilingualE5Small,
            self.config.embed_batch,
        )?;
        *slot = Some(Arc::clone(&e));
        Ok(Some(e))
    }

    /// Give every chunk of `chunks` marked [`StoredChunk::other_language`] that lacks one its
    /// multilingual vector. Returns how many were embedded. Nothing when
    /// [`Services::multilingual_on`] is off or no chunk is marked (the model is not even
    /// loaded).
    pub(crate) fn add_multilingual_vectors(&self, chunks: &mut [StoredChunk]) -> Result<usize> {
        // The passage's own text, without its contextual header (which the payload does not
        // keep): an index given these vectors later (`ingest reindex --multilingual`) gets
        // the same ones.
        let texts: Vec<Option<&str>> = chunks
            .iter()
            .map(|c| {
                (c.other_language && c.multilingual.is_none()).then_some(c.chunk.text.as_str())
            })
            .collect();
        let vectors = self.multilingual_vectors(&texts)?;
        let mut n = 0;
        for (c, v) in chunks.iter_mut().zip(vectors) {
            if v.is_some() {
                c.multilingual = v;
                n += 1;
            }
        }
        Ok(n)
    }

    /// The multilingual vector of each text given (`None` for the others, and for all when
    /// [`Services::multilingual_on`] is off); the model is loaded only when one is needed.
    pub(crate) fn multilingual_vectors(
        &self,
        texts: &[Option<&str>],
    ) -> Result<Vec<Option<Vec<f32>>>> {
        let mut out = vec![None; texts.len()];
        if !self.multilingual_on() {
            return Ok(out);
        }
        let which: Vec<(usize, &str)> = texts
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| (i, t)))
            .collect();
        if which.is_empty() {
            return Ok(out);
        }
        let Some(model) = self.multilingual_embedder()? else {
            return Ok(out);
        };
        let batch: Vec<&str> = which.iter().map(|&(_, t)| t).collect();
        for (&(i, _), v) in which.iter().zip(model.embed(&batch)?) {
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(v);
            }
        }
        *lock(&self.multilingual_points) = None;
        Ok(out)
    }

    /// Whether the index holds chunks with a multilingual vector: asked of the index at most
    /// every [`MULTILINGUAL_RECHECK`] while it holds none (another node may add some), once
    /// it does.
    fn index_has_multilingual(&self, store: &dyn VectorIndex) -> Result<bool> {
        let mut seen = lock(&self.multilingual_points);
        if let Some((has, at)) = *seen {
            if has || at.elapsed() < MULTILINGUAL_RECHECK {
                return Ok(has);
            }
        }
        let has = store.multilingual_space() && store.has_multilingual_points()?;
        *seen = Some((has, std::time::Instant::now()));
        Ok(has)
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
            None => Arc::new(EdgeIndex::open(self.data.root())?),
            Some(server) => {
                // Holder records say which files of a writer hold a content. Nodes sharing a
                // catalog are one writer: each lists the files the shared catalog holds, so
                // a file removed by any node is released for all (with a record per node, a
                // node that never saw the removal would keep its points alive).
                let holder = match &self.config.catalog {
                    Some(_) => crate::index::shared_holder_name(&*self.catalog)?,
                    None => crate::records::node_name(self.data.root())?,
                };
                Arc::new(ServerIndex::open(server, &holder)?)
            }
        };
        *slot = Some(Arc::clone(&s));
        Ok(s)
    }

    /// How far the current run has come: files and bytes found and read, chunks known and
    /// embedded, the file being embedded. Read it from another thread while `ingest` runs
    /// (the CLI's progress line does).
    pub fn progress(&self) -> Arc<crate::RunProgress> {
        Arc::clone(&self.progress)
    }

    /// Write every point of the index (id, dense vector, payload) to `out` as JSON lines, in
    /// no particular order: what [`crate::Ingestor::import`] reads to move the index to another
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

    /// When the last run ended and what it did.
    pub fn last_run(&self) -> Option<LastRun> {
        self.catalog().last_run()
    }

    /// Catalog totals, for one scope or all.
    pub fn stats(&self, scope: Option<&Scope>) -> CatalogStats {
        self.catalog().stats(scope)
    }

    /// Every catalog entry of `scope` (files, containers, failed and skipped ones), for the
    /// faces that report on a whole scope (`ingest eval --names`).
    pub fn entries_of(&self, scope: &Scope) -> Vec<crate::index::CatalogEntry> {
        self.catalog().entries(scope)
    }

    /// The points in the vector store, for `ingest status`: a store elsewhere is opened to
    /// count; an embedded shard only when there is one (a status of an index that holds
    /// nothing yet does not create it).
    pub fn points_stored(&self) -> Result<usize> {
        if self.config.server.is_some() || self.data.shard().is_dir() {
            Ok(self.store()?.count(None)?)
        } else {
            Ok(0)
        }
    }
}

/// Whether the data dir's records of how its index was made (model variant, recipe, store)
/// may be missing because its content predates them: an embedded catalog with entries. A
/// shared catalog holds other nodes' content, which this data dir's records do not speak
/// for: a node joining one starts with its own records from its configuration (nodes of
/// one catalog must be given the same model, recipe and store).
fn records_predate(config: &Config, catalog: &dyn Catalog) -> bool {
    config.catalog.is_none() && !catalog.scopes().is_empty()
}
