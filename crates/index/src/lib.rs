//! The index: where chunks and their vectors are stored and searched, and the catalog of what
//! it holds.
//!
//! - [`IndexRead`] and [`IndexWrite`] are what the rest of the crate asks of a vector index,
//!   split as Qdrant's own API is: searches and inventories on one side, writes on the other.
//!   [`VectorIndex`] is both. A backend implements the two traits; [`EdgeIndex`] (in
//!   `edge.rs`) is the embedded Qdrant Edge shard.
//! - `payload.rs` is the payload schema every backend stores: the fields of a point, how a
//!   chunk becomes a payload, how a payload becomes a [`Hit`] or a [`PointRecord`], and the
//!   filters on those fields.
//! - `catalog.rs` is the [`Catalog`]: what each scope holds, file by file (embedded, SQLite);
//!   `catalog_pg.rs` the same interface in PostgreSQL, shared by several nodes, over the TLS
//!   of `pg_tls.rs` (the URL's `sslmode`, rustls).
//! - `repair.rs` makes the catalog and a [`VectorIndex`] agree after a crash.
//!
//! Points are chunks. A point's id is derived from its scope, its file's content hash and its
//! chunk index ([`point_id`]), so re-ingesting the same bytes rewrites the same points, and
//! identical bytes in one scope are stored once: the payload's `locators` lists every file
//! that holds them.

// The base layer, under the names the modules here have always used.
pub(crate) use ingest_base::data_dir::DataDir;
pub(crate) use ingest_base::{access, error, failpoint, lock, perms, report};
pub(crate) use ingest_embed as embed;

mod catalog;
mod catalog_pg;
pub mod confidence;
#[cfg(test)]
mod conformance;
mod edge;
pub mod filter;
mod fusion;
mod held_under;
mod keywords;
pub mod name_match;
pub mod objects;
mod payload;
mod pg_tls;
mod repair;
mod server;
#[cfg(any(test, feature = "testing"))]
pub mod testkit;

use std::collections::{BTreeSet, HashMap};

use crate::embed::Chunk;
use crate::error::Result;
use extractors::Scope;

pub use catalog::{entry_card_key, shared_holder_name, MAX_HOLDERS};
pub use catalog::{
    holder_rank, Catalog, CatalogContents, CatalogEntries, CatalogEntry, CatalogJobs,
    CatalogRecords, CatalogStats, EntryStatus, JobRow, LastRun, ShadowedMember, SqliteCatalog,
};
pub use catalog_pg::{CatalogUrl, PgCatalog};

/// The catalog's four traits, for code that calls them on a concrete catalog
/// (`use ingest_index::prelude::*`); through `dyn Catalog` they need no import.
pub mod prelude {
    pub use crate::catalog::{CatalogContents, CatalogEntries, CatalogJobs, CatalogRecords};
}
pub use catalog_pg::{PgResult, PgSession};
pub use confidence::{Confidence, Evidence};
pub use edge::EdgeIndex;
pub use fusion::FUSION_CANDIDATES;
pub use held_under::HeldUnder;
pub use repair::RepairReport;
pub use repair::{repair, DirtyMarker};
pub use server::{ServerConfig, ServerIndex};

/// The most hits one search returns, whatever its `limit`.
pub const MAX_SEARCH_HITS: usize = 1000;

/// A chunk with its vector, ready to upsert.
#[derive(Debug, Clone)]
pub struct StoredChunk {
    /// The chunk: text, object, locator.
    pub chunk: Chunk,
    /// Its embedding.
    pub vector: Vec<f32>,
    /// Its embedding by the multilingual model, for a chunk in another language than English
    /// (see [`MULTILINGUAL_VECTOR`]); `None` for English chunks and where the multilingual
    /// space is off.
    pub multilingual: Option<Vec<f32>>,
    /// Whether the chunk is part of a document in another language than English and so
    /// gets a multilingual vector ([`crate::embed::language::other_language_chunks`] decides,
    /// document by document, before the chunks are batched).
    pub other_language: bool,
    /// The content (blake3 of the file's bytes) the chunk was cut from.
    pub content_hash: String,
    /// Every file locator holding these bytes in this scope; the first is shown in results.
    pub locators: Vec<String>,
    /// The user tags (`key=value`) of those files, sorted: see [`Holders::tags`].
    pub tags: Vec<String>,
}

/// The files holding one content in one scope, and their tags: what every chunk of the
/// content carries beside its text (its `locators` and `tags` payload fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holders {
    /// The files, in locator order (the first is the one search results show).
    pub locators: Vec<String>,
    /// The union of the files' user tags, each `key=value`, sorted and without repeats: a
    /// content held by two files matches a tag filter when either file has the tag.
    pub tags: Vec<String>,
}

/// What the index holds of one content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredContent {
    /// Chunk indexes present in the store.
    pub chunk_indexes: BTreeSet<u32>,
    /// The files holding it, as its first point read says.
    pub locators: Vec<String>,
    /// Their tags, as its first point read says.
    pub tags: Vec<String>,
}

/// One stored point: whose, which chunk of which content, and the files holding it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PointRecord {
    /// The scope the point belongs to (`Scope::key`).
    pub scope_key: String,
    /// The content (blake3 of the file's bytes) the chunk was cut from.
    pub content_hash: String,
    /// Which chunk of that content.
    pub chunk_index: Option<u32>,
    /// The files holding the content (its payload's `locators`).
    pub locators: Vec<String>,
    /// Their tags (its payload's `tags`).
    pub tags: Vec<String>,
}

/// One point as stored: its id, dense vector and whole payload. [`IndexRead::export_points`]
/// gives them and [`IndexWrite::import_points`] takes them (the keyword vector is computed
/// again from the payload), so an index moves or grows without embedding anything.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExportedPoint {
    /// The point id (see `point_id`).
    pub id: u64,
    /// The dense embedding.
    pub vector: Vec<f32>,
    /// The multilingual embedding of a chunk in another language ([`MULTILINGUAL_VECTOR`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multilingual: Option<Vec<f32>>,
    /// The payload (text, locators, scope, filters' fields).
    pub payload: serde_json::Map<String, serde_json::Value>,
}

/// The most other files a hit lists as holding identical content (`also_in`).
pub const MAX_HIT_ALSO_IN: usize = 16;
/// The most bytes of tags a hit lists.
pub const MAX_HIT_TAG_BYTES: usize = 4096;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One search result, straight from the payload.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Hit {
    /// The chunk's full locator: file locator and fragment.
    pub locator: String,
    /// The ranking's score: what orders the hits of one answer, never rising down the
    /// list. `dense`: the cosine similarity; `keyword`: the BM25 score; `hybrid`: the fused
    /// score, 1 for the best hit of the answer (comparable within one answer only).
    pub score: f32,
    /// How relevant the chunk is on an absolute scale, comparable between searches: its
    /// cosine similarity to the query, or its BM25 score / [`fusion::BM25_PER_RELEVANCE`] when
    /// that is higher (what `min_score` bounds).
    #[serde(default)]
    pub relevance: f32,
    /// Whether the hit answers the question ([`confidence`]).
    #[serde(default)]
    pub confidence: Confidence,
    /// What the relevance was made of, for judging the confidence; not serialized.
    #[serde(skip)]
    pub evidence: Evidence,
    /// The chunk's text.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The heading path of the section the chunk is in.
    pub section: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The page label (a PDF's printed page number), if any.
    pub label: Option<String>,
    /// Other files with identical content (the first [`MAX_HIT_ALSO_IN`] of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_in: Vec<String>,
    /// How many more files hold identical content than `also_in` lists.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub also_in_more: usize,
    /// The user tags (`key=value`) of the files holding the chunk (at most
    /// [`MAX_HIT_TAG_BYTES`] of them, in order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// How many more tags the files carry than `tags` lists.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tags_more: usize,
    /// The content the chunk was cut from (blake3 of the file's bytes).
    pub content_hash: String,
    /// The type of the object the chunk was cut from (`text`, `image`, …).
    #[serde(default)]
    pub content_type: String,
    /// A passage of the file, or its card (name, place, type, properties, outline).
    #[serde(default)]
    pub kind: crate::embed::ChunkKind,
    /// The 1-based physical page the chunk is on, if the file has pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The spreadsheet sheet the chunk is from, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// The 1-based slide the chunk is from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slide: Option<u32>,
    /// The chunk's number within its content (0-based, in reading order).
    #[serde(default)]
    pub chunk_index: u32,
    /// The chunk's id in the index: stable for the same bytes in the same scope (a hash of
    /// the scope, the content and `chunk_index`), so a re-upload keeps its ids.
    #[serde(default)]
    pub chunk_id: u64,
    /// The scope the chunk is stored in: whose file it is (the reader's own, or shared with
    /// it by another user of its mandate). Not serialized: answers name another owner by
    /// its label (`owner`), and one's own file not at all.
    #[serde(skip)]
    pub owner: Scope,
}

/// How a search ranks chunks.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Meaning and words together: the dense and the keyword rankings fused by their
    /// normalised scores, page by page (the default; best on mixed questions).
    #[default]
    Hybrid,
    /// Meaning only: cosine similarity of the question's embedding to each chunk's.
    Dense,
    /// Words only: BM25 over each chunk's file name, section path and text. Needs no model.
    Keyword,
}

impl SearchMode {
    /// Every mode, in the order reports list them.
    pub const ALL: [SearchMode; 3] = [SearchMode::Dense, SearchMode::Keyword, SearchMode::Hybrid];

    /// The mode's name as the CLI, the tools and the config take it.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Dense => "dense",
            SearchMode::Keyword => "keyword",
        }
    }

    /// Whether the mode ranks by the question's embedding (and so needs the model).
    pub fn uses_embedding(self) -> bool {
        !matches!(self, SearchMode::Keyword)
    }
}

impl std::fmt::Display for SearchMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SearchMode {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        SearchMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown search mode {s:?} (hybrid, dense or keyword)"))
    }
}

/// What an index search looks for: the question's embedding, its words, or both. With both,
/// the two rankings are fused by their normalised scores (`fusion.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexQuery {
    /// The question's embedding (dense ranking).
    pub vector: Option<Vec<f32>>,
    /// The question's text (keyword ranking).
    pub text: Option<String>,
    /// The question's embedding by the multilingual model, when the index holds chunks in
    /// other languages: ranks the [`MULTILINGUAL_VECTOR`] space beside `vector`'s.
    pub multilingual: Option<Vec<f32>>,
    /// `text` is a name (a file's, or the words of one, as a user types it): its words are
    /// matched as they are, in no guessed language — a name of three words is no sentence,
    /// and a guess of Spanish drops `de` and `en` from `live manual de` as stop words.
    pub name: bool,
}

impl IndexQuery {
    /// Rank by embedding only.
    pub fn dense(vector: Vec<f32>) -> Self {
        IndexQuery {
            vector: Some(vector),
            text: None,
            multilingual: None,
            name: false,
        }
    }

    /// Rank by words only.
    pub fn keyword(text: impl Into<String>) -> Self {
        IndexQuery {
            vector: None,
            text: Some(text.into()),
            multilingual: None,
            name: false,
        }
    }

    /// Rank by the words of a name ([`IndexQuery::name`]).
    pub fn name(text: impl Into<String>) -> Self {
        IndexQuery {
            name: true,
            ..IndexQuery::keyword(text)
        }
    }
}

/// What a search may narrow its hits to, besides its scope: every condition set must hold.
/// The default narrows nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchFilter {
    /// Only chunks of files at or under this locator: a folder (`/d/docs`), an archive at any
    /// depth (`/d/a.zip!/inner.tar.gz`) or one file, without `#fragment`. Whole path segments
    /// only: `/d/a` covers `/d/a/x.txt`, not `/d/ab.txt`. A trailing `/` or `!/` is ignored;
    /// an empty prefix (or `/`) narrows nothing. A content held by several files matches when any of them is under it.
    pub locator_prefix: Option<String>,
    /// Contents (scope key, content hash) that `locator_prefix` lets through although their
    /// points do not name a file under it: held there by more files than a point names
    /// ([`HeldUnder`], from the catalog). Empty: the points' own `containers` decide.
    pub unnamed_under: Vec<(String, String)>,
    /// Only objects of this type.
    pub content_type: Option<extractors::ContentType>,
    /// Only file cards, or only passages (`None`: both).
    pub kind: Option<crate::embed::ChunkKind>,
    /// Only chunks of files with this name (the last segment of a locator, any case).
    pub file_name: Option<String>,
    /// Only chunks on these 1-based physical pages, first and last included.
    pub pages: Option<(u32, u32)>,
    /// Only chunks in this section or its subsections: a section path as chunks carry it
    /// (`2 Setup › 2.1 Install`, titles joined by `extractors::SECTION_SEPARATOR`).
    pub section_path: Option<String>,
    /// Only chunks of this spreadsheet sheet (by name).
    pub sheet: Option<String>,
    /// Only chunks of this 1-based slide.
    pub slide: Option<u32>,
    /// Only chunks of files with every one of these user tags (`key=value`, as given at
    /// upload): a content held by several files matches when any of them has each tag.
    pub tags: Vec<String>,
    /// Only chunks stored in exactly this scope (its [`Scope::key`]): one owner's files
    /// among those the reader may read.
    pub owner_key: Option<String>,
    /// Only shared content (`Some(true)`), or only private content (`Some(false)`).
    pub shared: Option<bool>,
    /// Only these points (by id), when not empty: a hybrid search looks up the cosine of
    /// the hits only its words found.
    pub ids: Vec<u64>,
    /// Only chunks of files whose names (without extension) hold every one of these words
    /// (as [`name_match::words`] splits them): the cards a name query names wholly.
    pub name_words: Vec<String>,
}

/// One ranking of a search: by meaning (the query's embedding, cosine) or by words (the
/// query's keyword vector, BM25).
#[derive(Debug, Clone, Copy)]
pub enum Ranking<'a> {
    Meaning(&'a [f32]),
    Words(&'a str),
    /// By the multilingual model's cosine, among the points that have a
    /// [`MULTILINGUAL_VECTOR`] (chunks in other languages than English).
    Multilingual(&'a [f32]),
    /// By BM25, the text being a name's words ([`IndexQuery::name`]).
    Name(&'a str),
}

/// The name of the second dense vector: chunks (and cards) in another language than English
/// carry, beside the index model's vector, one from the multilingual model
/// (multilingual-e5-small), so that a question in one language finds a passage in another
/// while English text is embedded once, by the index's own model. A search ranks this space
/// too when the index holds such points (`fusion.rs`).
pub const MULTILINGUAL_VECTOR: &str = "multilingual";

/// The beam of an HNSW search by meaning (`hnsw_ef`), on both backends. Qdrant's default
/// (the index's `ef_construct`, 100) equals the candidates a fused search asks for, so the
/// graph walk ends as soon as it has that many: clusters of near-identical rows (a
/// spreadsheet's, a CSV's) trap it, and passages a full scan ranks first (cosine 0.62 against
/// the walk's best 0.39, on the paraphrase set) are never returned. 512 makes the walk close
/// to a full scan on these indexes at a few milliseconds (docs/EVALUATION.md, "The meaning
/// search's beam").
pub const MEANING_SEARCH_EF: usize = 512;

/// A stable 64-bit point id for chunk `index` of content `hash` in scope `scope_key`.
pub fn point_id(scope_key: &str, hash: &str, index: u32) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(scope_key.as_bytes());
    h.update(&[0]);
    h.update(hash.as_bytes());
    h.update(&index.to_le_bytes());
    let bytes = h.finalize();
    let mut id = [0u8; 8];
    id.copy_from_slice(bytes.as_bytes().get(..8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(id)
}

/// Reading an index: searches within a scope, counts, and the inventories that repair and
/// the consistency checks compare with the catalog.
///
/// `pub` only so that tests can reach it through `ingest::testing`; the module is private.
pub trait IndexRead: Send + Sync {
    /// The best chunks for `query` that `scope` may read (its own points, narrowed by
    /// feature instance and mandate when set, plus points shared within its mandate) and that
    /// `filter` lets through, best first: the `limit` after skipping the `offset` best (for
    /// paging). Only the `MAX_SEARCH_HITS` (1000) best are ever reached, whatever is asked.
    ///
    /// `min_score` bounds the embedding's cosine similarity when the query has a vector
    /// (with both vector and text, every hit passes it: the words only reorder those points),
    /// else the BM25 score. A hybrid query (vector and text) is fused page by page
    /// (`fusion.rs`): a hit's score is its cosine, or its BM25 score / 80 when higher.
    ///
    /// Provided, and not meant to be overridden: the access filter, paging, ties and the
    /// fusion of two rankings live here once, above every backend's [`IndexRead::rank`].
    fn search(
        &self,
        scope: &Scope,
        query: &IndexQuery,
        limit: usize,
        offset: usize,
        min_score: Option<f32>,
        filter: &SearchFilter,
    ) -> Result<Vec<Hit>> {
        fusion::search(self, scope, query, (limit, offset, min_score), filter)
    }

    /// One ranking: the best `want` points that `filter` lets through (with at least
    /// `min_score`, when given), in any order. A text with no word the index knows ranks
    /// nothing. What a backend implements; callers use [`IndexRead::search`].
    fn rank(
        &self,
        ranking: Ranking<'_>,
        want: usize,
        min_score: Option<f32>,
        filter: &filter::Filter,
    ) -> Result<Vec<Hit>>;

    /// Number of points visible to `scope` (as [`IndexRead::search`] sees them), or of all
    /// points with `None`.
    fn count(&self, scope: Option<&Scope>) -> Result<usize>;

    /// Whether the index has the [`MULTILINGUAL_VECTOR`] space (an index made by an earlier
    /// version on a server that cannot add it has not: its chunks are stored without it).
    fn multilingual_space(&self) -> bool {
        false
    }

    /// Whether any point carries a [`MULTILINGUAL_VECTOR`] (so that a query is worth
    /// embedding by the multilingual model too).
    fn has_multilingual_points(&self) -> Result<bool> {
        Ok(false)
    }

    /// Visit every point once, in no particular order, reading only the fields of a
    /// [`PointRecord`]. The primitive behind [`IndexRead::inventory`] and
    /// [`IndexRead::point_records`]; a backend pages through its points here.
    fn for_each_point(&self, visit: &mut dyn FnMut(PointRecord)) -> Result<()>;

    /// What the index holds, content by content: (scope key, content hash) → the chunk
    /// indexes present and the locators of the first point read. Reads every point; used to
    /// reconcile the index with the catalog after a crash.
    fn inventory(&self) -> Result<HashMap<(String, String), StoredContent>> {
        let mut out: HashMap<(String, String), StoredContent> = HashMap::new();
        self.for_each_point(&mut |p| {
            let entry = out
                .entry((p.scope_key, p.content_hash))
                .or_insert_with(|| StoredContent {
                    chunk_indexes: BTreeSet::new(),
                    locators: p.locators,
                    tags: p.tags,
                });
            if let Some(i) = p.chunk_index {
                entry.chunk_indexes.insert(i);
            }
        })?;
        Ok(out)
    }

    /// Every point's identity and locators, in no particular order (for consistency checks
    /// and tests: [`IndexRead::inventory`] keeps only one locator list per content).
    fn point_records(&self) -> Result<Vec<PointRecord>> {
        let mut out = Vec::new();
        self.for_each_point(&mut |p| out.push(p))?;
        Ok(out)
    }

    /// Visit every point with its dense vector and whole payload, in no particular order
    /// (to move an index to another backend, or to embed its chunks again).
    fn export_points(&self, visit: &mut dyn FnMut(ExportedPoint)) -> Result<()>;
}

/// Writing an index. Each write is applied when the call returns (readable by the next
/// search) but durable only after [`IndexWrite::flush`].
///
/// Crash tests stop the process right after each write: an implementation hits the failpoint
/// sites `store.upsert`, `store.set_locators` (in [`IndexWrite::set_holders`]),
/// `store.delete` and `store.flush` (see `crate::failpoint`) after the corresponding write
/// succeeded.
pub trait IndexWrite: Send + Sync {
    /// Insert `chunks` into `scope`, replacing the points with the same ids (same scope,
    /// content hash and chunk index: see `point_id`). Nothing to do for no chunks.
    fn upsert(&self, scope: &Scope, chunks: &[StoredChunk]) -> Result<()>;

    /// Point every chunk of content `hash` in `scope` at the files in `holders` (given in
    /// locator order as the catalog lists them: the first is the one search results show)
    /// and give them those files' tags. A server shared by several nodes stores the sorted
    /// union of every node's files and tags.
    fn set_holders(&self, scope: &Scope, hash: &str, holders: &Holders) -> Result<()>;

    /// Delete every chunk of content `hash` in `scope`.
    fn delete_content(&self, scope: &Scope, hash: &str) -> Result<()> {
        self.delete_content_by_key(&scope.key(), hash)
    }

    /// Delete every chunk of content `hash` in the scope whose key is `scope_key` (as repair
    /// does for scopes the catalog no longer knows).
    fn delete_content_by_key(&self, scope_key: &str, hash: &str) -> Result<()>;

    /// Persist every write so far.
    fn flush(&self);

    /// Build the search structures a grown index needs (an HNSW graph for every segment past
    /// the engine's indexing threshold, about 6 500 chunks; merged small segments; deleted
    /// points vacuumed). Blocks; cheap when nothing grew. True if anything was rebuilt.
    fn optimize(&self) -> Result<bool>;

    /// Insert exported points as they are (replacing points with the same ids); their
    /// keyword vectors are computed again from their payloads. Nothing is embedded.
    fn import_points(&self, points: &[ExportedPoint]) -> Result<()>;
}

/// A vector index, read and write: what the ingestor and repair work with.
pub trait VectorIndex: IndexRead + IndexWrite {}

impl<T: IndexRead + IndexWrite + ?Sized> VectorIndex for T {}

/// Chunks with simple vectors for tests that need a real index but no model.
#[cfg(test)]
pub mod testing {
    use super::*;
    use crate::embed::DIMENSIONS;

    /// A unit vector along `axis`.
    pub fn unit(axis: usize) -> Vec<f32> {
        let mut v = vec![0.0; DIMENSIONS];
        if let Some(x) = v.get_mut(axis % DIMENSIONS) {
            *x = 1.0;
        }
        v
    }

    /// `n` chunks of content `hash` held by `locator`; chunk `i` lies along axis `axis + i`
    /// and covers line `i + 1`.
    pub fn chunks(hash: &str, n: u32, locator: &str, axis: usize) -> Vec<StoredChunk> {
        (0..n)
            .map(|i| {
                let location = format!("{locator}#line={}", i + 1);
                StoredChunk {
                    chunk: Chunk {
                        index: i,
                        text: format!("{hash} chunk {i}"),
                        object_id: format!("{hash}-{i}"),
                        content_type: extractors::ContentType::Text,
                        context_ref: extractors::ContextRef {
                            container_path: locator.to_string(),
                            location,
                            label: Some(format!("line {}", i + 1)),
                            page_index: None,
                            section_id: None,
                            sheet_name: None,
                            slide_index: None,
                        },
                        tokens: 3,
                        kind: crate::embed::ChunkKind::Passage,
                        context: String::new(),
                    },
                    vector: unit(axis + i as usize),
                    multilingual: None,
                    other_language: false,
                    content_hash: hash.to_string(),
                    locators: vec![locator.to_string()],
                    tags: Vec::new(),
                }
            })
            .collect()
    }

    /// (scope key, hash) → (chunk indexes, locators), sorted for comparison.
    pub fn inventory(index: &dyn VectorIndex) -> Vec<(String, String, Vec<u32>, Vec<String>)> {
        let mut out: Vec<_> = index
            .inventory()
            .unwrap()
            .into_iter()
            .map(|((k, h), c)| (k, h, c.chunk_indexes.into_iter().collect(), c.locators))
            .collect();
        out.sort();
        out
    }
}
