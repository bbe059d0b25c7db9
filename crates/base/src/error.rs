//! The library's error type. Per-file problems are not errors of the run: they are reported in
//! the file's [`crate::report::FileReport`] and the run goes on.

use std::path::PathBuf;

/// Errors that stop an operation (opening the index, a search), not a single file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is inconsistent; the text says which setting.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// No provisioned model was found.
    #[error(
        "embedding model not found in {searched}; provision it with `make models` \
         (runs scripts/setup-models.py) or point INGEST_MODEL_DIR at a provisioned folder"
    )]
    ModelMissing {
        /// The folders that were searched.
        searched: String,
    },
    /// The model folder is there but could not be loaded.
    #[error("could not load the embedding model from {dir}: {reason}")]
    ModelLoad {
        /// The model folder.
        dir: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The model failed on a batch.
    #[error("embedding failed: {0}")]
    Embed(String),
    /// The vector index failed.
    #[error("vector store error at {path}: {reason}")]
    Store {
        /// The shard's folder.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The Qdrant server holding the index failed, or could not be reached.
    #[error("vector store {store}: {reason}")]
    Server {
        /// The store's address (`qdrant://HOST:PORT/COLLECTION`).
        store: String,
        /// What went wrong.
        reason: String,
    },
    /// The catalog or a content index could not be read or written.
    #[error("catalog error at {path}: {reason}")]
    Catalog {
        /// The catalog or content file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A file or folder of the data directory could not be used.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The data directory belongs to another user.
    #[error(
        "the data directory {path} belongs to another user (uid {owner}); it holds their \
         documents, so it is not used"
    )]
    NotOwner {
        /// The data directory.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
    },
    /// A scope's ids could be confused with another scope's, or it shares without a
    /// mandate (see [`crate::access::check_scope`]).
    #[error("invalid scope: {0}")]
    Scope(String),
    /// A workflow's record or stored tool result could not be read as written.
    #[error("workflow store: {0}")]
    Workflow(String),
    /// A request that cannot be acted on as it is (a search query too long, …); the text
    /// says what to change.
    #[error("invalid request: {0}")]
    Request(String),
    /// The caller's scope holds as much as it may: nothing new is taken until it deletes
    /// some (HTTP 507).
    #[error("quota: {0}")]
    Quota(String),
    /// The caller may read this file but not change it: it is another owner's.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// No such job or file in the caller's scope.
    #[error("not found: {0}")]
    NotFound(String),
    /// An upload is larger than the limit.
    #[error("the upload is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// As many uploads are being received as the queue takes at once: try again shortly
    /// (HTTP 429).
    #[error("busy: {reason}; retry after {retry_after_secs} s")]
    Busy {
        /// Which bound was reached.
        reason: String,
        /// Seconds after which a retry has a chance.
        retry_after_secs: u64,
    },
    /// As many jobs are open as the queue holds: try again once some ended (HTTP 503).
    #[error("queue full: {reason}; retry after {retry_after_secs} s")]
    QueueFull {
        /// Which bound was reached.
        reason: String,
        /// Seconds after which a retry has a chance.
        retry_after_secs: u64,
    },
    /// An upload could not be taken: a bad name, a body that could not be read.
    #[error("upload refused: {0}")]
    Upload(String),
    /// A request body was cut while it was read, for a reason its caller answers by kind.
    #[error("upload refused: {0}")]
    BodyCut(BodyCut),
    /// The upload queue is stopping and takes nothing new.
    #[error("shutting down: no new uploads are taken")]
    ShuttingDown,
    /// The MCP server could not start or serve (address in use, a broken handshake).
    #[error("MCP server: {0}")]
    Mcp(String),
    /// The HTTP upload service could not start or stop.
    #[error("upload service: {0}")]
    Service(String),
    /// The watch daemon could not be reached or answered out of protocol, or could not
    /// follow a folder's changes.
    #[error("watch daemon: {0}")]
    Daemon(String),
    /// A stored object pack (a file's content objects) could not be written or read back.
    #[error("object pack: {0}")]
    ObjectPack(String),
    /// A search filter that cannot be turned into a store query.
    #[error("bad search filter: {0}")]
    Filter(String),
    /// An `ingest export` file that cannot be imported.
    #[error("import: {0}")]
    Import(String),
    /// The keyword (BM25) model could not be built.
    #[error("keyword model: {0}")]
    Keywords(String),
    /// A failpoint armed with `:error` (tests only; see `INGEST_FAILPOINTS`).
    #[error("failpoint {0}")]
    Failpoint(String),
    /// A stage of the pipeline failed (a thread pool, a content that vanished mid-run).
    #[error("pipeline stage failed: {0}")]
    Pipeline(String),
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Why a request body was cut while it was read. The body's stream fails with a
/// `std::io::Error` carrying it ([`BodyCut::into_io`]); whoever reads the stream finds it
/// again ([`BodyCut::of`]) and answers by its kind, not by its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyCut {
    /// Silent too long, or slower than the least pace taken (HTTP 408).
    #[error("{0}")]
    TooSlow(String),
    /// No room left in the byte budgets of the key or the service (HTTP 429).
    #[error("{0}")]
    NoRoom(String),
    /// Over the route's size limit (HTTP 413).
    #[error("{0}")]
    TooLarge(String),
}

impl BodyCut {
    /// The I/O error a body stream fails with for this cut.
    pub fn into_io(self) -> std::io::Error {
        std::io::Error::other(self)
    }

    /// The cut `error` carries, at any depth of its sources (an I/O error wrapping one, an
    /// HTTP library's error wrapping that), if any.
    pub fn of<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a BodyCut> {
        let mut at: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = at {
            if let Some(cut) = e.downcast_ref::<BodyCut>() {
                return Some(cut);
            }
            if let Some(cut) = e
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<BodyCut>())
            {
                return Some(cut);
            }
            at = e.source();
        }
        None
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
