//! Configuration: plain data with defaults, validated by [`Config::validate`] before
//! [`crate::Ingestor::open`] builds the runtime objects from it.

use std::path::PathBuf;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::isolation::{Isolation, IsolationConfig};
// Sub-configs owned by the stages they configure, composed here.
pub use crate::embed::ChunkingConfig;
pub use crate::unpack::Limits;

/// Read a TOML file with `parse` (its errors name the file): the faces' configuration files.
pub fn load_toml<T>(path: &std::path::Path, parse: impl FnOnce(&str) -> Result<T>) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse(&text).map_err(|e| match e {
        Error::Config(m) => Error::Config(format!("{}: {m}", path.display())),
        other => other,
    })
}

/// Everything needed to open an [`crate::Ingestor`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the vector store shard and the catalog live.
    pub data_dir: PathBuf,
    /// Folder holding the provisioned model; `None` searches the usual places
    /// (see [`crate::embed::find_model_dir`]).
    pub model_dir: Option<PathBuf>,
    /// Which ONNX file of the model runs. `None`: the one the index was embedded with (the
    /// data directory records it), or the default ([`crate::ModelVariant::Bf16`]) for a
    /// new index. A variant other than the index's is refused.
    pub model_variant: Option<crate::ModelVariant>,
    /// Give chunks in other languages than English a second vector from the multilingual
    /// model (multilingual-e5-small) and rank it beside the index model's, so that a question
    /// in one language finds a passage in another (see
    /// [`crate::index::MULTILINGUAL_VECTOR`]). On by default; English text is embedded once
    /// either way, and a search embeds its question by the second model only when the index
    /// holds such chunks. No effect when the index model is multilingual itself.
    pub multilingual: bool,
    /// Hard limits for each container tree.
    pub limits: Limits,
    /// How text is cut into chunks.
    pub chunking: ChunkingConfig,
    /// Chunks per model run. Each embedding call holds 4 runs' worth, sorted by length so a
    /// run pads little; files share every call round-robin (see `pipeline::embed`). 16–32
    /// keeps memory low; larger barely helps speed.
    pub embed_batch: usize,
    /// Extraction threads; 0 means one per core.
    pub extract_threads: usize,
    /// Capacity, in items, of each bounded channel between stages.
    pub channel_capacity: usize,
    /// Bytes in flight between reading a file and embedding it: a file's bytes from when it
    /// is read until it is extracted, then its chunks' text until the embed stage takes them.
    /// Reading waits while the budget is spent; a single file larger than the budget goes
    /// through alone. This, not the number of items, is what bounds the pipeline's memory.
    pub in_flight_bytes: u64,
    /// Where documents are parsed: isolated worker processes (default) or in-process.
    pub isolation: IsolationConfig,
    /// Ingest files and folders inside a walked folder whose names start with `.`. Off by
    /// default: each such entry gets one `ignored` line and nothing under it is read.
    pub include_hidden: bool,
    /// Follow symbolic links met in a walked folder whose target lies inside it (loops
    /// detected); off: each link is one `ignored` line.
    pub follow_links: bool,
    /// What folder walks leave out besides hidden entries: `exclude`/`include` globs and
    /// the `.gitignore`, `.ignore` and `.ingestignore` files met (honoured by default).
    /// Each entry left out is one `ignored` line; nothing under it is read.
    pub exclusions: crate::Exclusions,
    /// Read again files that failed or were skipped last time even though their size and
    /// modification time did not change (and archives holding such members): after a limit
    /// or the extraction timeout was raised. Off by default: an unchanged failure is
    /// reported as it was, without touching the file.
    pub retry_unindexed: bool,
    /// How often a long run saves the catalog, so a crash loses little work (less often when
    /// a save would cost over 5 % of the run). Zero saves after every stored item, whatever
    /// it costs: crash tests use it to reach every state between two writes.
    pub checkpoint_interval: std::time::Duration,
    /// The largest tool answer the server sends, in chars (UTF-8 bytes), whatever a call's
    /// `max_chars` asks (see [`crate::tools`]).
    pub max_answer_chars: usize,
    /// OCR of image-only PDF pages and pictures with tesseract, inside the extraction of
    /// their file (so under the same worker limits). On by default; a missing `tesseract`
    /// leaves files indexed without OCR text (their objects say why).
    pub ocr: extractors::OcrOptions,
    /// Where the vector index lives: `None` is the embedded Qdrant Edge shard in
    /// `data_dir` (nothing to run); a [`crate::ServerConfig`] is a collection on a Qdrant
    /// server or cluster, which several ingest nodes (each with its own data directory)
    /// may write at once.
    pub server: Option<crate::ServerConfig>,
    /// Where the catalog lives: `None` is the embedded SQLite database in `data_dir`
    /// (nothing to run); a [`crate::CatalogUrl`] (`postgres://…`) is a PostgreSQL database
    /// several nodes share, with a Qdrant server collection as their store.
    pub catalog: Option<crate::CatalogUrl>,
    /// Ingest only this share of the files: part `I` of `N` (0-based), by a stable hash of
    /// each top-level file's locator, so that N nodes writing one server collection embed
    /// disjoint work and together index everything. `None` takes every file.
    pub partition: Option<Partition>,
    /// The workflow layer's limits, time to live and `gather_context` defaults.
    pub workflow: WorkflowConfig,
    /// Remote folders registered for scopes: what the agent's source tools
    /// (`list_sources`, `browse_source`, `pull_source`, `search_documents` with `source`)
    /// name, and what the daemons keep synced when marked `sync`.
    pub sources: Vec<crate::RegisteredSource>,
    /// Where sources may connect besides the hosts their URLs name
    /// (`[source_destinations]`, see [`crate::sources::Destinations`]): by default no
    /// loopback, link-local, private, unspecified or multicast address.
    pub source_destinations: crate::sources::Destinations,
    /// The most entries (files and archive members) the owner of a source may hold, shared or
    /// not, for `pull_source` to add to its scope: a pull for an owner holding as many is refused, and a folder pull reads
    /// at most the room left. `None` (the default): a pull's own bound only. `ingest serve`
    /// sets its `max_files_per_key`, the bound its uploads have.
    pub max_scope_files: Option<usize>,
}

/// Part `index` of `count` of the files (see [`Config::partition`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// Which part, from 0.
    pub index: u32,
    /// How many parts.
    pub count: u32,
}

impl Partition {
    /// Whether the file (or archive) at `locator` belongs to this part: blake3 of the
    /// locator, the same on every machine and in every version.
    pub fn takes(&self, locator: &str) -> bool {
        let hash = blake3::hash(locator.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(hash.as_bytes().get(..8).unwrap_or(&[0; 8]));
        u64::from_le_bytes(first) % u64::from(self.count.max(1)) == u64::from(self.index)
    }
}

impl std::str::FromStr for Partition {
    type Err = String;

    /// `I/N`, with `I` from 0 to `N - 1`.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let bad = || format!("partition {s:?}: expected I/N with 0 <= I < N (e.g. 0/2)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Partition { index, count })
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from(".ingest"),
            model_dir: None,
            model_variant: None,
            multilingual: true,
            limits: Limits::default(),
            chunking: ChunkingConfig::default(),
            embed_batch: 16,
            extract_threads: 0,
            channel_capacity: 16,
            in_flight_bytes: 256 * 1024 * 1024,
            isolation: IsolationConfig::default(),
            include_hidden: false,
            follow_links: false,
            exclusions: crate::Exclusions::default(),
            retry_unindexed: false,
            checkpoint_interval: std::time::Duration::from_secs(2),
            server: None,
            catalog: None,
            partition: None,
            max_answer_chars: 100_000,
            ocr: extractors::OcrOptions::default(),
            workflow: WorkflowConfig::default(),
            sources: Vec::new(),
            source_destinations: crate::sources::Destinations::default(),
            max_scope_files: None,
        }
    }
}

impl Config {
    /// What every extraction of this configuration is told (it travels to the workers): the
    /// OCR settings and PDFium, when the model folder holds it. [`crate::Ingestor::open`]
    /// computes this once.
    pub fn extract_options(&self) -> extractors::ExtractOptions {
        let pdfium_library = crate::embed::find_pdfium(self.model_dir.as_deref());
        if pdfium_library.is_none() {
            tracing::debug!("PDFium is not in the model folder: PDF text through pdf-extract");
        }
        extractors::ExtractOptions {
            ocr: self.ocr.clone(),
            pdfium_library,
            render: None,
        }
    }

    /// A default configuration storing its data in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Config {
            data_dir: data_dir.into(),
            ..Config::default()
        }
    }

    /// Check the settings against each other; [`crate::Ingestor::open`] calls this.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        if self.chunking.max_tokens < 16 {
            return bad("chunking.max_tokens must be at least 16");
        }
        if self.chunking.overlap_tokens * 2 > self.chunking.max_tokens {
            return bad("chunking.overlap_tokens must be at most half of max_tokens");
        }
        if self.embed_batch == 0 || self.embed_batch > 256 {
            return bad("embed_batch must be between 1 and 256");
        }
        if self.catalog.is_some() && self.server.is_none() {
            return bad("a shared catalog (postgres://) describes a shared store: give --store qdrant://… too (nodes with embedded shards would each hold part of what the catalog lists)");
        }
        crate::sources::check_sources(&self.sources).map_err(Error::Config)?;
        self.source_destinations.check().map_err(Error::Config)?;
        if self.channel_capacity == 0 {
            return bad("channel_capacity must be at least 1");
        }
        if self.in_flight_bytes < 1024 * 1024 {
            return bad("in_flight_bytes must be at least 1 MiB");
        }
        if self.max_answer_chars < MIN_MAX_CHARS {
            return bad("max_answer_chars must be at least 200");
        }
        if self.chunking.max_file_chunks == 0 {
            return bad("chunking.max_file_chunks must be at least 1");
        }
        if self.limits.max_depth == 0 || self.limits.max_files == 0 {
            return bad("limits.max_depth and limits.max_files must be at least 1");
        }
        if self.limits.max_ratio == 0 {
            return bad("limits.max_ratio must be at least 1");
        }
        if let Err(e) = self.workflow.validate() {
            return Err(Error::Config(e));
        }
        if let Err(e) = self.exclusions.check() {
            return Err(Error::Config(e));
        }
        if let Err(e) = self.ocr.check() {
            return Err(Error::Config(format!("ocr: {e}")));
        }
        if self.ocr.max_pages_per_file > 100_000 {
            return bad("ocr.max_pages_per_file must be at most 100000");
        }
        let iso = &self.isolation;
        if iso.memory_bytes < 64 * 1024 * 1024 {
            return bad("isolation.memory_bytes must be at least 64 MiB");
        }
        if iso.cpu_seconds == 0 || iso.deadline.is_zero() {
            return bad("isolation.cpu_seconds and isolation.deadline must be positive");
        }
        if iso.mode == Isolation::Processes {
            match iso.command() {
                Ok((program, _)) if program.is_file() => {}
                Ok((program, _)) => {
                    return Err(Error::Config(format!(
                        "extraction worker program {} does not exist",
                        program.display()
                    )))
                }
                Err(e) => {
                    return Err(Error::Config(format!(
                        "cannot find the extraction worker program: {e}"
                    )))
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_nonsense_does_not() {
        assert!(Config::default().validate().is_ok());
        let mut c = Config::default();
        c.chunking.overlap_tokens = 200;
        assert!(c.validate().is_err());
        let c = Config {
            embed_batch: 0,
            ..Config::default()
        };
        assert!(c.validate().is_err());
        let c = Config {
            in_flight_bytes: 1000,
            ..Config::default()
        };
        assert!(c.validate().is_err());
        let mut c = Config::default();
        c.ocr.languages = "eng -c x".into();
        assert!(c.validate().is_err());
    }
}

/// The smallest budget a tool call may ask for, in chars: below it even a bare answer may not
/// fit (`crate::tools` re-exports it).
pub const MIN_MAX_CHARS: usize = 200;

// The workflow layer's settings (`crate::workflow`, which re-exports them): here, so that the
// configuration depends on no layer above it.

/// The largest tool result any configuration may accept, in bytes.
pub const MAX_RESULT_BYTES_CEILING: u64 = 64 * 1024 * 1024;

/// Limits and defaults of the workflow layer.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowConfig {
    /// The largest tool result stored, in bytes (at most [`MAX_RESULT_BYTES_CEILING`]).
    pub max_result_bytes: u64,
    /// The most items (tool results, entities and summaries together) one workflow holds.
    pub max_items: usize,
    /// The most bytes of tool results one workflow holds.
    pub max_workflow_bytes: u64,
    /// The most workflows one scope (user, feature instance, mandate) holds at once.
    pub max_workflows: usize,
    /// A workflow not used for this long is ended (everything deleted) by the next sweep.
    pub ttl: Duration,
    /// What `gather_context` takes from each layer when a call does not say.
    pub context: ContextLayers,
}

impl Default for WorkflowConfig {
    fn default() -> Self {
        WorkflowConfig {
            max_result_bytes: 16 * 1024 * 1024,
            max_items: 10_000,
            max_workflow_bytes: 256 * 1024 * 1024,
            max_workflows: 100,
            ttl: Duration::from_secs(7 * 24 * 3600),
            context: ContextLayers::default(),
        }
    }
}

impl WorkflowConfig {
    /// Check the limits.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.max_result_bytes == 0 || self.max_result_bytes > MAX_RESULT_BYTES_CEILING {
            return Err(format!(
                "workflow.max_result_bytes must be between 1 and {MAX_RESULT_BYTES_CEILING}"
            ));
        }
        if self.max_items == 0 || self.max_workflows == 0 {
            return Err("workflow.max_items and workflow.max_workflows must be at least 1".into());
        }
        if self.max_workflow_bytes < self.max_result_bytes {
            return Err("workflow.max_workflow_bytes must be at least max_result_bytes".into());
        }
        if self.ttl.is_zero() {
            return Err("workflow.ttl must be positive".into());
        }
        self.context.validate()
    }
}

/// The most hits one layer may ask for.
pub const MAX_LAYER_LIMIT: usize = 50;

/// What one layer contributes: at most `limit` items scoring at least `min_score` (the
/// cosine similarity of meaning, 0..1, as `search_documents`' `min_score`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerLimit {
    /// The most items from this layer (0 leaves the layer out).
    pub limit: usize,
    /// Drop items less similar than this (cosine, 0..1); absent: no floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f32>,
}

/// The layers' limits, in priority order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ContextLayers {
    /// The caller's own documents (default: 15, at least 0.45).
    pub instance: LayerLimit,
    /// The workflow's entities: all of them whatever the query, most recently set first
    /// (default: 10; `min_score` is ignored).
    pub entities: LayerLimit,
    /// Documents shared in the caller's mandate (default: 10, at least 0.5).
    pub shared: LayerLimit,
    /// The workflow's latest conversation summaries (default: 1; `min_score` is ignored).
    pub summary: LayerLimit,
    /// Passages of the workflow's stored tool results, those of its newest results first
    /// (default: 5, no floor).
    pub tool_results: LayerLimit,
}

impl Default for ContextLayers {
    fn default() -> Self {
        let l = |limit, min_score| LayerLimit { limit, min_score };
        ContextLayers {
            instance: l(15, Some(0.45)),
            entities: l(10, None),
            shared: l(10, Some(0.5)),
            summary: l(1, None),
            tool_results: l(5, None),
        }
    }
}

impl ContextLayers {
    /// Check every limit and floor.
    pub fn validate(&self) -> std::result::Result<(), String> {
        for (name, l) in self.named() {
            if l.limit > MAX_LAYER_LIMIT {
                return Err(format!("{name}.limit must be at most {MAX_LAYER_LIMIT}"));
            }
            if l.min_score.is_some_and(|s| !(0.0..=1.0).contains(&s)) {
                return Err(format!("{name}.min_score must be between 0 and 1"));
            }
        }
        Ok(())
    }

    fn named(&self) -> [(&'static str, &LayerLimit); 5] {
        [
            ("instance", &self.instance),
            ("entities", &self.entities),
            ("shared", &self.shared),
            ("summary", &self.summary),
            ("tool_results", &self.tool_results),
        ]
    }
}
