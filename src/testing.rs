//! What the crate's integration tests, benches and fuzz targets reach inside the library: not
//! part of the API (hidden from the docs), and nothing here is used by the library itself.
//!
//! Unit tests inside the crate use these too, so that each helper exists once.

use std::io::{Cursor, Write};

/// Failpoint sites and the variable that arms them, for crash tests (see `src/failpoint.rs`).
pub use crate::failpoint::{ENV as FAILPOINTS_ENV, SITES as FAILPOINT_SITES};

/// The stages' internals, for benches, fuzz targets and checks on what is stored.
pub use crate::embed::{
    load_tokenizer, Chunk, Chunker, Embedder, FastEmbedder, TooManyChunks, DIMENSIONS,
    MAX_SEQ_TOKENS, WINDOW_BYTES,
};
pub use crate::isolation::{InProcess, WorkerPool, WORKER_ARG};
pub use crate::unpack::{
    is_hidden, walk, walk_with, Budget, DiskEntry, DiskFile, Leaf, Limit, Unpacker, WalkOptions,
};

/// The index's internals, for checks on what is stored.
pub use crate::index::{
    Catalog, CatalogEntry, EdgeIndex, EntryStatus, ExportedPoint, IndexRead, IndexWrite,
    PointRecord, ShadowedMember, StoredContent,
};

/// A ZIP archive of `entries` (name, bytes), deflated, in memory.
#[allow(clippy::unwrap_used)] // a test helper: writing to memory does not fail
pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in entries {
        w.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// Process ids of `pool`'s idle workers: tells whether a worker was reused or replaced.
pub fn idle_worker_pids(pool: &WorkerPool) -> Vec<u32> {
    pool.idle_pids()
}
