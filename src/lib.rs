//! `ingest`: unpack documents, extract their content with its provenance, embed it locally and
//! store it in an embedded vector index that an agent searches within a scope.
//!
//! The stages, each in its own module: [`unpack`](crate::Unpacker) (containers under one
//! budget), extraction (the [`extractors`] crate), [`Chunker`] (token-aware), [`Embedder`]
//! ([`FastEmbedder`]: fastembed, offline), [`VectorStore`] (Qdrant Edge), the [`Catalog`], and
//! the [`Ingestor`] that runs them as a bounded pipeline.
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

mod batcher;
mod catalog;
mod config;
mod embed;
mod error;
mod failpoint;
mod gate;
pub mod isolation;
mod perms;
mod pipeline;
mod repair;
mod report;
mod serve;
mod store;
mod unpack;
mod watch;

pub use catalog::{Catalog, CatalogEntry, CatalogStats, EntryStatus, LastRun, ShadowedMember};
pub use config::{ChunkingConfig, Config, Limits};
pub use embed::{
    find_model_dir, load_tokenizer, model_search_path, Chunk, Chunker, Embedder, FastEmbedder,
    TooManyChunks, DIMENSIONS, MAX_SEQ_TOKENS, WINDOW_BYTES,
};
pub use error::{Error, Result};
pub use isolation::{
    run_worker_if_requested, InProcess, Isolation, IsolationConfig, WorkerPool, WORKER_ARG,
};
pub use perms::{owner_only_umask, prepare_data_dir};
pub use pipeline::{Ingestor, Input};
pub use repair::RepairReport;
pub use report::{FileReport, FileStatus, IngestReport, StageSeconds, Summary};
pub use serve::{ask, status_of, Listening, Request, Server, MAX_CONNECTIONS, REQUEST_TIMEOUT};
pub use store::{point_id, Hit, PointRecord, StoredContent, VectorStore};

/// Failpoint sites and the variable that arms them, for crash tests (see `src/failpoint.rs`).
#[doc(hidden)]
pub mod testing {
    pub use crate::failpoint::{ENV as FAILPOINTS_ENV, SITES as FAILPOINT_SITES};
}
pub use unpack::{
    is_hidden, walk, walk_with, Budget, DiskEntry, DiskFile, Leaf, Limit, Unpacker, WalkOptions,
};

/// The extraction crate, re-exported: data model, locators, detection, extractors.
pub use extractors;
pub use extractors::{
    ContentObject, ContentType, ContextRef, FileContentIndex, Fragment, Locator, Scope,
};
pub use watch::{socket_path, watch, SyncCause, WatchConfig};

/// Lock a mutex, poisoned or not: a panic while holding one of the crate's locks leaves
/// consistent data behind (every update is a single insert/remove or assignment), so
/// poisoning is not a reason to stop.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
