//! `ingest`: unpack documents, extract their content with its provenance, embed it locally and
//! store it in an embedded vector index that an agent searches within a scope.
//!
//! A file travels through four stages: the unpacker (folders and containers, one budget per
//! tree), extraction (the [`extractors`] crate, in isolated worker processes), chunking and
//! embedding (a local model on OpenVINO or ONNX Runtime), and the index (a Qdrant Edge shard
//! and the catalog). The [`Ingestor`] runs them as a bounded pipeline; this facade is
//! everything a caller needs.
//! ARCHITECTURE.md explains the layout and why.
//!
//! ```no_run
//! use ingest::{Config, Ingestor, Scope};
//!
//! # fn main() -> Result<(), ingest::Error> {
//! // Open once per process and share it: `Ingestor` is Send + Sync.
//! let ingestor = Ingestor::open(Config::new("/var/lib/ingest"))?;
//! let scope = Scope::user("alice");
//!
//! // From an upload handler: bytes in, one report per file (archive members included).
//! let report = ingestor.ingest_bytes("upload.zip", std::fs::read("upload.zip").unwrap(), &scope)?;
//! for file in &report.files {
//!     println!("{} {:?} {} chunks", file.locator, file.status, file.chunks);
//! }
//!
//! // Search what this scope may read.
//! for hit in ingestor.search("quarterly revenue", &scope, 5, Some(0.2))? {
//!     println!("{:.3} {}", hit.score, hit.locator);
//! }
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

// The base layer (crates/base), under the names the modules here have always used.
pub(crate) use ingest_base::{
    access, batcher, bounded_json, data_dir, error, failpoint, gate, lock, names, perms, progress,
    report,
};
pub(crate) use ingest_embed as embed;
pub(crate) use ingest_index as index;
pub(crate) use ingest_isolation as isolation;
pub(crate) use ingest_sources as sources;
pub(crate) use ingest_unpack as unpack;
mod config;
mod ingestor;
mod migrate;
mod pipeline;
mod records;
mod reindex;
mod run_slots;
mod services;
pub mod tools;
mod uploads;
pub mod workflow;

#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;

pub use access::{check_scope, MAX_ID_BYTES};
pub use config::{load_toml, ChunkingConfig, Config, Limits, Partition, WorkflowConfig};
pub use data_dir::DataDir;
pub use embed::{find_model_dir, find_pdfium, ModelVariant, Recipe};
pub use error::{Error, Result};
pub use index::{
    CatalogStats, CatalogUrl, Confidence, ExportedPoint, Hit, IndexQuery, LastRun, RepairReport,
    SearchFilter, SearchMode, ServerConfig,
};
pub use ingestor::Ingestor;
pub use isolation::{run_worker_if_requested, Isolation, IsolationConfig};
pub use migrate::{migrate, MigrateReport};
pub use perms::{owner_only_umask, prepare_data_dir};
pub use pipeline::quarantine;
pub use pipeline::Input;
pub use progress::{ProgressSnapshot, RunProgress};
pub use reindex::{ReindexProgress, ReindexReport};
pub use report::{FileReport, FileStatus, IngestReport, StageSeconds, Summary};
pub use services::Services;
pub use sources::{
    check_sources as sources_check, Credentials, Destinations, Provider, RegisteredSource, Source,
    SourceError, SourceUrl,
};
pub use tools::{AnsweredBy, ToolHost};
pub use unpack::Exclusions;
pub use uploads::{
    encode_tags, upload_name, FileLine, FileState, JobId, JobKind, JobState, JobStatus,
    Reservation, UploadOptions, Uploads, UploadsConfig, MAX_NAME_BYTES, MAX_NAME_SEGMENTS,
    MAX_SEGMENT_BYTES, MAX_TAGS,
};

/// The extraction crate, re-exported: data model, locators, detection, extractors.
pub use extractors;
pub use extractors::{ContentType, ExtractOptions, Locator, OcrOptions, Scope};

pub use ingest_base::MAX_QUERY_BYTES;
