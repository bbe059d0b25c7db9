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
use crate::embed::{find_model_dir, load_tokenizer, ChunkKind, Chunker, Embedder};
use crate::error::{Error, Result};
use crate::index::{
    Catalog, CatalogStats, EdgeIndex, HeldUnder, Hit, IndexQuery, LastRun, PgCatalog, SearchFilter,
    SearchMode, ServerIndex, SqliteCatalog, StoredChunk, VectorIndex,
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
    pub(crate) config: Config,
    /// The data directory `config` names.
    data: DataDir,
    /// What the index holds, file by file: only through [`Services::catalog`].
    catalog: Box<dyn Catalog>,
    pub(crate) embedder: Mutex<Option<Arc<dyn Embedder>>>,
    /// The multilingual model, loaded when the first chunk in another language or the first
    /// question to an index holding such chunks needs it ([`Services::multilingual_embedder`]).
    multilingual_embedder: Mutex<Option<Arc<dyn Embedder>>>,
    /// Whether the index was last seen holding chunks with a multilingual vector, and when.
    multilingual_points: Mutex<Option<(bool, std::time::Instant)>>,
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
    /// Where uploaded archives are kept for extraction on demand, when not in the data
    /// directory: the shared spool's `kept/` folder, set by the upload queue of a node that
    /// shares its catalog (so that every node extracts from what any node kept).
    kept_root: std::sync::OnceLock<std::path::PathBuf>,
    /// How far the current run has come ([`Services::progress`]).
    pub(crate) progress: Arc<crate::RunProgress>,
}

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
    pub(crate) fn open(config: Config, model_change: bool) -> Result<Self> {
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
            embedder: Mutex::new(None),
            multilingual_embedder: Mutex::new(None),
            multilingual_points: Mutex::new(None),
            chunker: Mutex::new(None),
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
    /// locator once. A hit's `score` orders the answer (the cosine similarity in `dense`,
    /// the BM25 score in `keyword`, the fused score in `hybrid`), its `relevance` is
    /// absolute (the cosine, or the BM25 score / 80 when higher) and `min_score` leaves out
    /// hits below that; without one every hit tied to the query is kept, each with its
    /// `confidence` ([`crate::index::confidence`]). Blocks while the model loads on first
    /// use (keyword searches never load it).
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

    /// The query's embedding when `mode` ranks by meaning (loading the model on first use); a
    /// query longer than [`crate::MAX_QUERY_BYTES`] is refused, an empty one has none.
    pub(crate) fn query_vector(
        &self,
        query: &str,
        mode: SearchMode,
    ) -> Result<Option<QueryVectors>> {
        if query.len() > crate::MAX_QUERY_BYTES {
            return Err(Error::Request(format!(
                "the query is {} bytes; at most {} are searched (the model reads 256 tokens)",
                query.len(),
                crate::MAX_QUERY_BYTES
            )));
        }
        if !mode.uses_embedding() || query.trim().is_empty() {
            return Ok(None);
        }
        let vector = self.embedder()?.embed_query(query)?;
        let multilingual = match self.multilingual_on() {
            true if self.index_has_multilingual(&*self.store()?)? => self
                .multilingual_embedder()?
                .map(|m| m.embed_query(query))
                .transpose()?,
            _ => None,
        };
        Ok(Some(QueryVectors {
            vector,
            multilingual,
        }))
    }

    /// [`Services::search_filtered`] with the query already embedded ([`Services::query_vector`]):
    /// several searches of one query embed it once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search_embedded(
        &self,
        query: &str,
        vectors: Option<QueryVectors>,
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
        let (vector, multilingual) = match vectors {
            Some(q) => (Some(q.vector), q.multilingual),
            None => (None, None),
        };
        let index_query = IndexQuery {
            vector,
            text: (mode != SearchMode::Dense).then(|| query.to_string()),
            multilingual,
            name: false,
        };
        let store = self.store()?;
        // Under a locator, the contents held there by more files than their points name are
        // let through by the catalog's word, and each hit names its file there.
        let held = filter
            .locator_prefix
            .as_deref()
            .map(|prefix| self.held_under(scope, filter, prefix));
        let extended;
        let filter = match &held {
            Some(h) if !h.unnamed.is_empty() => {
                extended = SearchFilter {
                    unnamed_under: h.unnamed.clone(),
                    ..filter.clone()
                };
                &extended
            }
            _ => filter,
        };
        // A page's other chunks share its locator: fetched beyond `limit` so that, each
        // locator once, `limit` hits are still there.
        let mut wanted = limit.saturating_mul(2).max(limit.saturating_add(10));
        if mode == SearchMode::Hybrid
            && min_score.is_none()
            && self.model_variant.relevance_floor().is_some()
        {
            // The whole fused list: those reaching the floor are ranked first ([`Self::judge`])
            // from all of it, as when the floor left the others out (in `dense` and `keyword`
            // the relevance follows the ranking: nothing moves).
            wanted = wanted.max(crate::index::FUSION_CANDIDATES);
        }
        let mut hits = store.search(scope, &index_query, wanted, 0, min_score, filter)?;
        // The cards a query names, placed first (by their name, whatever their relevance).
        let mut named = std::collections::HashSet::new();
        if filter.kind != Some(ChunkKind::Passage) {
            // A query that names a file (or its title) finds that file's card first, however
            // common the words of the name are elsewhere: by its exact file name, else by
            // its name's words.
            let first = match file_name_in(query) {
                Some(name) => {
                    let named = SearchFilter {
                        kind: Some(ChunkKind::Card),
                        file_name: Some(name.to_string()),
                        ..filter.clone()
                    };
                    store.search(scope, &index_query, limit, 0, min_score, &named)?
                }
                None => self.named_cards(&*store, query, scope, &hits, min_score, filter, mode)?,
            };
            if !first.is_empty() {
                hits.retain(|h| !first.iter().any(|f| f.chunk_id == h.chunk_id));
                named.extend(first.iter().map(|c| (c.owner.key(), c.chunk_id)));
                // Placed first by its name: ranked as the best of the others, at least.
                let top = hits.first().map_or(0.0, |h| h.score);
                let first = first.into_iter().map(|mut card| {
                    card.score = card.score.max(top);
                    card
                });
                hits.splice(0..0, first);
            }
        }
        if let Some(held) = &held {
            hits.iter_mut().for_each(|h| held.repoint(h));
        }
        // No locator twice in one answer: the first (best) hit of each stands for it.
        let mut seen = std::collections::HashSet::new();
        hits.retain(|h| seen.insert((h.owner.key(), h.locator.clone())));
        self.judge(query, &mut hits, &named, min_score.is_none());
        hits.truncate(limit);
        Ok(hits)
    }

    /// Each hit's confidence ([`crate::index::confidence`]), judged from its evidence and
    /// the share of the query's content words it holds; with `drop_unsupported` (no
    /// `min_score` given) the hits tied to the query by nothing are left out, so that a
    /// search whose candidates have no support answers nothing ("nothing relevant"). The
    /// cards the query names (`named`, placed first by their name) and the hits whose
    /// relevance reaches the model's floor come first, then the others, each in the
    /// ranking's order (a page's other chunks after every page's best); then each hit's `score` is made never to rise down the list, so that the score
    /// printed beside a hit says where it stands.
    fn judge(
        &self,
        query: &str,
        hits: &mut Vec<Hit>,
        named: &std::collections::HashSet<(String, u64)>,
        drop_unsupported: bool,
    ) {
        use crate::index::confidence;
        let floor = self.model_variant.relevance_floor();
        let is_named = |h: &Hit| named.contains(&(h.owner.key(), h.chunk_id));
        let asked = confidence::Asked::of(query);
        for h in hits.iter_mut() {
            let file = extractors::file_name_part(&h.locator);
            let section = h.section.as_deref().unwrap_or_default();
            let matched = format!("{file}\n{section}\n{}", h.text);
            h.evidence.coverage = asked.coverage(&matched);
            h.confidence = match is_named(h) {
                // The query names the file: it is what was asked for.
                true => confidence::Confidence::High,
                false => confidence::judge(&h.evidence, floor),
            };
        }
        if drop_unsupported {
            hits.retain(|h| confidence::supported(&h.evidence, floor));
        }
        // The hits reaching the model's floor first, each part in the ranking's order: a hit
        // below it never takes a place above one that reaches it (the order the fixed floor
        // gave by leaving them out, so recall is never lower than with it).
        if let Some(floor) = floor {
            hits.sort_by_key(|h| !is_named(h) && h.relevance < floor);
        }
        let mut ceiling = f32::INFINITY;
        for h in hits.iter_mut() {
            h.score = h.score.min(ceiling);
            ceiling = h.score;
        }
    }

    /// What the catalog holds under the locator `prefix` of a search by `scope` narrowed by
    /// `filter` ([`HeldUnder`]): of every owner whose files `scope` may read and the filter
    /// keeps.
    fn held_under(&self, scope: &Scope, filter: &SearchFilter, prefix: &str) -> HeldUnder {
        let catalog = self.catalog();
        let mut owners = crate::access::readable_owners(catalog.scopes(), scope, None);
        owners.retain(|o| {
            filter.owner_key.as_ref().is_none_or(|k| *k == o.key())
                && filter.shared.is_none_or(|s| s == o.is_shared)
        });
        HeldUnder::find(catalog, &owners, prefix)
    }

    /// The cards of the files `query` names by their name's (or title's) words
    /// ([`crate::index::name_match`]), best named first, at most
    /// [`crate::index::name_match::MAX_NAMED`]: found among the cards of files whose names
    /// hold every word of the query and the cards a keyword search ranks first, each
    /// with the relevance it has among `hits` when it is there, else its word score (BM25,
    /// and for a search by meaning, the share of the query's words its name holds).
    #[allow(clippy::too_many_arguments)]
    fn named_cards(
        &self,
        store: &dyn VectorIndex,
        query: &str,
        scope: &Scope,
        hits: &[Hit],
        min_score: Option<f32>,
        filter: &SearchFilter,
        mode: SearchMode,
    ) -> Result<Vec<Hit>> {
        use crate::index::name_match::{name_match, query_words, MAX_NAMED, NAMED_CANDIDATES};
        let Some(words) = query_words(query) else {
            return Ok(Vec::new());
        };
        let cards = SearchFilter {
            kind: Some(ChunkKind::Card),
            ..filter.clone()
        };
        // Candidates: the cards of files whose names hold every word of the query (however
        // many other cards hold them in their folders or text), then the cards the query's
        // words rank first (names that hold most of them, titles, subjects).
        let wholly = SearchFilter {
            name_words: words.iter().cloned().collect(),
            ..cards.clone()
        };
        let by_name = IndexQuery::name(query);
        let mut candidates = store.search(scope, &by_name, NAMED_CANDIDATES, 0, None, &wholly)?;
        let by_words = IndexQuery::keyword(query);
        for card in store.search(scope, &by_words, NAMED_CANDIDATES, 0, None, &cards)? {
            if !candidates.iter().any(|c| c.chunk_id == card.chunk_id) {
                candidates.push(card);
            }
        }
        let mut named: Vec<((f32, f32), Hit)> = candidates
            .into_iter()
            .filter_map(|mut card| {
                let share = name_match(&words, &card.locator, &card.text)?;
                if let Some(found) = hits.iter().find(|h| h.chunk_id == card.chunk_id) {
                    card.score = found.score;
                    card.relevance = found.relevance;
                    card.evidence = found.evidence;
                }
                // Named by the query: as relevant as the share of its name's words asked.
                if mode != SearchMode::Keyword && share.0 > card.relevance {
                    card.relevance = share.0;
                    card.evidence.words = card.relevance;
                    card.score = card.relevance;
                }
                Some((share, card))
            })
            .filter(|(_, card)| min_score.is_none_or(|m| card.relevance >= m))
            .collect();
        // The best named first; of equal names, the better word score (a stable order).
        named.sort_by(|((a, a2), x), ((b, b2), y)| {
            b.total_cmp(a)
                .then(b2.total_cmp(a2))
                .then(y.score.total_cmp(&x.score))
        });
        named.truncate(MAX_NAMED);
        Ok(named.into_iter().map(|(_, card)| card).collect())
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

/// Whether the data dir's records of how its index was made (model variant, recipe, store)
/// may be missing because its content predates them: an embedded catalog with entries. A
/// shared catalog holds other nodes' content, which this data dir's records do not speak
/// for: a node joining one starts with its own records from its configuration (nodes of
/// one catalog must be given the same model, recipe and store).
fn records_predate(config: &Config, catalog: &dyn Catalog) -> bool {
    config.catalog.is_none() && !catalog.scopes().is_empty()
}
