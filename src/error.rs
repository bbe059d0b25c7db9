//! The library's error type. Per-file problems are not errors of the run: they are reported in
//! the file's [`crate::FileReport`] and the run goes on.

use std::path::PathBuf;

/// Errors that stop an operation (opening the index, a search), not a single file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(
        "embedding model not found in {searched}; provision it with `make models` \
         (runs scripts/setup-models.py) or point INGEST_MODEL_DIR at a provisioned folder"
    )]
    ModelMissing { searched: String },
    #[error("could not load the embedding model from {dir}: {reason}")]
    ModelLoad { dir: PathBuf, reason: String },
    #[error("embedding failed: {0}")]
    Embed(String),
    #[error("vector store error at {path}: {reason}")]
    Store { path: PathBuf, reason: String },
    #[error("catalog error at {path}: {reason}")]
    Catalog { path: PathBuf, reason: String },
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the data directory {path} belongs to another user (uid {owner}); it holds their \
         documents, so it is not used"
    )]
    NotOwner { path: PathBuf, owner: u32 },
    #[error("pipeline stage failed: {0}")]
    Pipeline(String),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
