//! The shared catalog: the [`Catalog`] in a PostgreSQL database, so that several ingest
//! nodes (each with its own data directory, all writing one Qdrant collection) see one
//! catalog. Chosen by `--catalog postgres://…` (or `INGEST_CATALOG`).
//!
//! What differs from the embedded catalog ([`super::SqliteCatalog`]), and why:
//! - Every write commits by itself (a statement, or a short transaction where it must see
//!   and change rows in one step): a transaction held open until the next checkpoint would
//!   hold row locks other nodes wait on. [`CatalogRecords::save`] returns the first failure since
//!   the last save, as the embedded catalog does.
//! - Rows name their scope and tag set by key (the scope's key, the blake3 of the tag set),
//!   not by an id cached in memory: another node may add or drop a scope at any time.
//! - Content indexes and object packs live in the database (`ingest_contents`), so every
//!   node reads every content; a node keeps a copy of a pack it reads in its own
//!   `content/` (packs are read by offset), dropped with the content.
//! - A scope row is dropped with its last entry under an exclusive advisory lock on the
//!   scope, which every write to the scope takes shared: a write on another node never
//!   loses its scope.
//! - The schema is versioned (`ingest_migrations`); a node applies what is missing under an
//!   advisory lock when it opens the catalog, and refuses a schema newer than it knows.
//!
//! The sync `postgres` client (rust-postgres) is used rather than `sqlx`: the catalog
//! interface is synchronous and called from pipeline threads; the embedded catalog keeps
//! `rusqlite`. The client runs its own small runtime, so a call made on a thread of the
//! service's runtime runs on a scoped thread of its own (see [`PgCatalog::call`]).

// Internal: reachable from outside only through the hidden `testing` module.
#![allow(missing_docs)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use extractors::{FileContentIndex, Scope};
use postgres::Client;

use super::catalog::{
    bounded_holders, entry_of_row, to_i64, to_u64, CatalogContents, CatalogEntries, CatalogEntry,
    CatalogJobs, CatalogRecords, CatalogStats, LastRun,
};
use super::objects::{ContentRecord, PackReader};
use super::pg_tls::{take_tls_params, Manager, Tls};
use super::{Holders, JobRow};
use crate::error::{Error, Result};

/// The schema, by version: each step applied once, in order, in one transaction.
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        r#"
CREATE TABLE ingest_scopes (
    key TEXT PRIMARY KEY,
    scope TEXT NOT NULL
);
CREATE TABLE ingest_tag_sets (
    id TEXT PRIMARY KEY,
    tags TEXT NOT NULL
);
CREATE TABLE ingest_entries (
    scope TEXT NOT NULL,
    locator TEXT COLLATE "C" NOT NULL,
    parent TEXT COLLATE "C",
    hash TEXT,
    size BIGINT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    chunks BIGINT NOT NULL,
    mime TEXT,
    tags TEXT,
    shadowed TEXT,
    PRIMARY KEY (scope, locator)
);
CREATE INDEX ingest_entries_by_hash ON ingest_entries (scope, hash) WHERE status = 'indexed';
CREATE INDEX ingest_entries_holding ON ingest_entries (hash) WHERE status = 'indexed';
CREATE INDEX ingest_entries_by_parent ON ingest_entries (scope, parent) WHERE parent IS NOT NULL;
CREATE TABLE ingest_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE ingest_contents (
    hash TEXT PRIMARY KEY,
    structure BYTEA NOT NULL,
    pack BYTEA NOT NULL
);
"#,
    ),
    (
        2,
        r#"
CREATE TABLE ingest_jobs (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    record TEXT NOT NULL,
    ended_at DOUBLE PRECISION
);
CREATE INDEX ingest_jobs_ended ON ingest_jobs (ended_at) WHERE ended_at IS NOT NULL;
"#,
    ),
    (
        3,
        r#"
ALTER TABLE ingest_jobs
    ADD COLUMN name_key TEXT,
    ADD COLUMN owner TEXT,
    ADD COLUMN lease_until TIMESTAMPTZ;
CREATE INDEX ingest_jobs_open ON ingest_jobs (id) WHERE ended_at IS NULL;
CREATE INDEX ingest_jobs_open_names ON ingest_jobs (name_key) WHERE ended_at IS NULL;
CREATE INDEX ingest_jobs_open_scopes ON ingest_jobs (scope) WHERE ended_at IS NULL;
"#,
    ),
    (
        4,
        r#"
CREATE TABLE ingest_workflows (
    key TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    scope TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    touched_at BIGINT NOT NULL,
    next BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX ingest_workflows_by_principal ON ingest_workflows (principal);
CREATE INDEX ingest_workflows_by_touch ON ingest_workflows (touched_at);
CREATE TABLE ingest_workflow_items (
    workflow TEXT NOT NULL,
    kind INTEGER NOT NULL,
    name TEXT NOT NULL,
    seq BIGINT NOT NULL,
    indexed_name TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    raw_bytes BIGINT NOT NULL DEFAULT 0,
    body TEXT NOT NULL,
    PRIMARY KEY (workflow, kind, name)
);
CREATE INDEX ingest_workflow_items_by_indexed_name ON ingest_workflow_items (workflow, indexed_name);
CREATE TABLE ingest_workflow_texts (
    workflow TEXT NOT NULL,
    handle TEXT NOT NULL,
    text BYTEA NOT NULL,
    PRIMARY KEY (workflow, handle)
);
"#,
    ),
    (
        5,
        // Jobs are ordered by when the database accepted them, not by their ids (a node's
        // clock and random bits): nodes whose clocks differ keep an upload and a later
        // delete of one name in order.
        r#"
ALTER TABLE ingest_jobs ADD COLUMN seq BIGSERIAL;
DROP INDEX ingest_jobs_open;
CREATE INDEX ingest_jobs_open ON ingest_jobs (seq) WHERE ended_at IS NULL;
"#,
    ),
];

/// The advisory lock key that serializes claims of jobs among nodes (a claim reads which
/// names other nodes hold, then takes jobs: two claims at once could both take one name).
const QUEUE_LOCK: i64 = 0x696e_6765_7374_0002;

/// Claim up to `$3` open jobs for node `$1` under a lease of `$2` seconds (see
/// [`CatalogJobs::claim_jobs`]); run under [`QUEUE_LOCK`].
const CLAIM: &str = "
UPDATE ingest_jobs j SET owner = $1, lease_until = now() + make_interval(secs => $2)
FROM (
    SELECT c.id FROM ingest_jobs c
    WHERE c.ended_at IS NULL
      AND (c.owner IS NULL OR c.lease_until < now())
      AND NOT EXISTS (
          SELECT 1 FROM ingest_jobs o
          WHERE o.ended_at IS NULL AND o.name_key = c.name_key AND o.seq < c.seq
            AND NOT (o.owner IS NOT DISTINCT FROM $1 AND o.lease_until >= now()))
    ORDER BY c.seq
    LIMIT $3
    FOR UPDATE OF c SKIP LOCKED
) picked
WHERE j.id = picked.id
RETURNING j.record, j.seq";

/// The advisory lock key that serializes schema changes among nodes.
const MIGRATION_LOCK: i64 = 0x696e_6765_7374_0001;

/// The columns of an entry as [`PgCatalog::entry_of`] reads them (`e` the entry, `t` its
/// tag set).
const ENTRY_COLUMNS: &str = "e.locator, e.parent, e.hash, e.size, e.mtime_ns, e.status, \
     e.reason, e.chunks, e.mime, t.tags, e.shadowed";
const ENTRY_FROM: &str = "ingest_entries e LEFT JOIN ingest_tag_sets t ON t.id = e.tags";

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A catalog location from configuration: `postgres://user:password@host:port/db` (or
/// `postgresql://`), with `sslmode` and `sslrootcert` (see `pg_tls.rs`: TLS is
/// `verify-full` unless every host is a loopback one). Its credentials are never shown:
/// [`std::fmt::Display`] and `Debug` name the user, host, port and database only.
#[derive(Clone)]
pub struct CatalogUrl {
    config: postgres::Config,
    shown: String,
    /// The (first) host, as errors name it.
    host: String,
    tls: Tls,
}

impl std::str::FromStr for CatalogUrl {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let refuse = |why: &str| {
            Error::Config(format!(
                "catalog: {why} (expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE\
                 [?sslmode=verify-full&sslrootcert=PATH])"
            ))
        };
        if !(s.starts_with("postgres://") || s.starts_with("postgresql://")) {
            return Err(refuse("not a postgres:// URL"));
        }
        if s.len() > 4096 {
            return Err(refuse("longer than 4096 bytes"));
        }
        let (rest, params) = take_tls_params(s).map_err(|why| refuse(&why))?;
        let config: postgres::Config =
            rest.parse().map_err(|_| refuse("the URL does not parse"))?;
        let host = match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(h)) => h.clone(),
            #[cfg(unix)]
            Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => return Err(refuse("no host")),
        };
        let tls = Tls::resolve(&params, &config).map_err(|why| refuse(&why))?;
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let shown = format!(
            "postgres://{}@{host}:{port}/{}",
            config.get_user().unwrap_or(""),
            config.get_dbname().unwrap_or("")
        );
        Ok(CatalogUrl {
            config,
            shown,
            host,
            tls,
        })
    }
}

impl std::fmt::Display for CatalogUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl std::fmt::Debug for CatalogUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Connections one [`PgSession`] keeps at most: as many calls go to the database at once
/// (tool calls, pipeline threads, the upload queue), the others wait for one.
const POOL_SIZE: u32 = 8;

/// A pool of connections to the database at a [`CatalogUrl`] (r2d2), with the TLS its URL
/// asks for: made on first use, a connection found broken is dropped and the call tried
/// again on another. Errors name the URL without its password, and say why a connection
/// failed ([`Manager`]).
pub struct PgSession {
    url: CatalogUrl,
    pool: r2d2::Pool<Manager>,
}

impl PgSession {
    /// A session on `url` (nothing connected yet).
    pub fn new(url: &CatalogUrl) -> Self {
        let mut config = url.config.clone();
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("ingest");
        tracing::debug!("catalog {url}: sslmode={}", url.tls.mode().name());
        let manager = Manager::new(config, &url.tls, &url.host);
        let pool = r2d2::Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(0))
            // A round trip per call otherwise; a broken connection fails its call, which is
            // tried again on another.
            .test_on_check_out(false)
            .connection_timeout(CONNECT_TIMEOUT)
            // Failures are this type's errors, said once by their caller.
            .error_handler(Box::new(r2d2::NopErrorHandler))
            .build_unchecked(manager);
        PgSession {
            url: url.clone(),
            pool,
        }
    }

    /// The database's location, as shown.
    pub fn url(&self) -> &CatalogUrl {
        &self.url
    }

    pub fn error(&self, reason: impl std::fmt::Display) -> Error {
        Error::Catalog {
            path: PathBuf::from(self.url.to_string()),
            reason: reason.to_string(),
        }
    }

    /// Run `f` on a connection of the pool. A call that fails on a connection found closed
    /// (the database restarted: every idle connection is) is tried again on another, as
    /// often as the pool holds connections.
    pub fn try_call<T: Send>(
        &self,
        f: impl Fn(&mut Client) -> PgResult<T> + Send + Sync,
    ) -> Result<T> {
        off_runtime(|| {
            for _ in 0..=POOL_SIZE {
                let mut conn = self
                    .pool
                    .get()
                    .map_err(|e| self.error(cannot_connect(&e)))?;
                match f(&mut conn) {
                    Ok(v) => return Ok(v),
                    // Dropped by the pool when it is handed back (it is closed).
                    Err(e) if e.is_closed() || conn.is_closed() => continue,
                    Err(e) => return Err(self.error(e)),
                }
            }
            Err(self.error("every connection of the pool closed"))
        })
    }
}

/// What the pool says when it has no connection to give: r2d2's "timed out waiting for
/// connection", then the last attempt's error (explained by [`Manager`]), which is the
/// news.
fn cannot_connect(e: &r2d2::Error) -> String {
    let said = e.to_string();
    match said.split_once(": ") {
        Some((_, why)) => format!("no connection in {} s: {why}", CONNECT_TIMEOUT.as_secs()),
        None => said,
    }
}

/// The catalog in PostgreSQL: one [`PgSession`] per node.
pub struct PgCatalog {
    session: PgSession,
    /// This node's copies of object packs (`content/` of its data directory).
    cache: PathBuf,
    /// The first failure since the last save.
    failed: Mutex<Option<String>>,
}

impl std::fmt::Debug for PgCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCatalog")
            .field("url", self.session.url())
            .finish()
    }
}

/// One entry's row, as read (its tag set as JSON).
type Row = super::catalog::Row<String>;

fn row_of(r: &postgres::Row) -> std::result::Result<Row, postgres::Error> {
    Ok((
        r.try_get(0)?,
        r.try_get(1)?,
        r.try_get(2)?,
        r.try_get(3)?,
        r.try_get(4)?,
        r.try_get(5)?,
        r.try_get(6)?,
        r.try_get(7)?,
        r.try_get(8)?,
        r.try_get(9)?,
        r.try_get(10)?,
    ))
}

fn entry_of(row: Row) -> CatalogEntry {
    entry_of_row(row, |tags| {
        tags.and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    })
}

/// The smallest string above every string starting with `prefix`, if there is one: its
/// last character that can be incremented, incremented (UTF-8 keeps code point order, and
/// locators compare bytewise, `COLLATE "C"`).
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=0x10FFFF).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The advisory lock key of a scope.
fn scope_lock(key: &str) -> i64 {
    let h = blake3::hash(key.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.as_bytes()[..8]);
    i64::from_le_bytes(b)
}

fn tag_set_id(json: &str) -> String {
    blake3::hash(json.as_bytes()).to_hex().to_string()
}

pub type PgResult<T> = std::result::Result<T, postgres::Error>;

/// Run `f` where the sync client may block: on this thread, or on a scoped thread of its own
/// when this one belongs to a Tokio runtime (whose threads must not block on another).
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

impl PgCatalog {
    /// The value [`CatalogRecords::record_once`] recorded under `key`, if any (nothing written).
    pub fn recorded(&self, key: &str) -> Result<Option<String>> {
        let key = format!("record:{key}");
        self.try_call(|c| {
            c.query_opt("SELECT value FROM ingest_meta WHERE key = $1", &[&key])?
                .map(|r| r.try_get::<_, String>(0))
                .transpose()
        })
    }

    /// Connect to the catalog at `url`, apply the migrations it lacks, and keep copies of
    /// packs in `data_dir`'s `content/`.
    pub fn open(url: &CatalogUrl, data_dir: &Path) -> Result<Self> {
        let catalog = PgCatalog {
            session: PgSession::new(url),
            cache: crate::DataDir::at(data_dir).contents(),
            failed: Mutex::new(None),
        };
        let applied = match catalog.try_call(migrate)? {
            Ok(applied) => applied,
            Err(newer) => {
                return Err(catalog.error(format!(
                    "schema version {newer} is newer than this ingest knows ({}): a newer ingest migrated it",
                    MIGRATIONS.iter().map(|(v, _)| *v).max().unwrap_or(0)
                )))
            }
        };
        if applied > 0 {
            tracing::info!("catalog {url}: applied {applied} schema migration(s)");
        }
        Ok(catalog)
    }

    fn error(&self, reason: impl std::fmt::Display) -> Error {
        self.session.error(reason)
    }

    pub fn try_call<T: Send>(
        &self,
        f: impl Fn(&mut Client) -> PgResult<T> + Send + Sync,
    ) -> Result<T> {
        self.session.try_call(f)
    }

    /// [`Self::try_call`], a failure noted (logged now, returned by the next save) and
    /// answered with `default`.
    fn call<T: Send>(&self, default: T, f: impl Fn(&mut Client) -> PgResult<T> + Send + Sync) -> T {
        self.try_call(f).unwrap_or_else(|e| {
            tracing::error!("{e}");
            let mut failed = crate::lock(&self.failed);
            if failed.is_none() {
                *failed = Some(e.to_string());
            }
            default
        })
    }

    fn query_entries(
        &self,
        filter: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Vec<CatalogEntry> {
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE {filter}");
        self.call(Vec::new(), |c| {
            c.query(sql.as_str(), params)?
                .iter()
                .map(row_of)
                .collect::<PgResult<Vec<Row>>>()
        })
        .into_iter()
        .map(entry_of)
        .collect()
    }

    fn count(&self, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> u64 {
        to_u64(self.call(0i64, |c| c.query_one(sql, params)?.try_get(0)))
    }

    fn strings(&self, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> Vec<String> {
        self.call(Vec::new(), |c| {
            c.query(sql, params)?.iter().map(|r| r.try_get(0)).collect()
        })
    }

    fn tags_of_content(&self, scope: &Scope, hash: &str) -> Vec<String> {
        let key = scope.key();
        let sets = self.strings(
            "SELECT DISTINCT t.tags FROM ingest_entries e JOIN ingest_tag_sets t ON t.id = e.tags
             WHERE e.scope = $1 AND e.hash = $2 AND e.status = 'indexed'",
            &[&key, &hash],
        );
        let tags: BTreeSet<String> = sets
            .iter()
            .filter_map(|s| serde_json::from_str::<Vec<String>>(s).ok())
            .flatten()
            .collect();
        tags.into_iter().collect()
    }

    /// This node's copy of the pack of `hash`.
    fn cached_pack(&self, hash: &str) -> PathBuf {
        self.cache.join(format!("{hash}.pack"))
    }

    fn drop_cached_pack(&self, hash: &str) -> Result<()> {
        let path = self.cached_pack(hash);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(&path, e)),
        }
    }
}

/// Apply the migrations the database lacks (one transaction, under an advisory lock, so
/// nodes opening at once apply each once); how many were applied, or the version of a
/// schema newer than this build knows (nothing is changed then).
fn migrate(c: &mut Client) -> PgResult<std::result::Result<usize, i32>> {
    let mut tx = c.transaction()?;
    tx.batch_execute(&format!(
        "SELECT pg_advisory_xact_lock({MIGRATION_LOCK});
         CREATE TABLE IF NOT EXISTS ingest_migrations (
             version INTEGER PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         );"
    ))?;
    let current: Option<i32> = tx
        .query_one("SELECT max(version) FROM ingest_migrations", &[])?
        .try_get(0)?;
    let current = current.unwrap_or(0);
    let latest = MIGRATIONS.iter().map(|(v, _)| *v).max().unwrap_or(0);
    if current > latest {
        return Ok(Err(current));
    }
    let mut applied = 0;
    let mut pending: Vec<&(i32, &str)> = MIGRATIONS.iter().filter(|(v, _)| *v > current).collect();
    pending.sort_by_key(|(v, _)| *v);
    for (version, sql) in pending {
        tx.batch_execute(sql)?;
        tx.execute(
            "INSERT INTO ingest_migrations (version) VALUES ($1)",
            &[version],
        )?;
        applied += 1;
    }
    tx.commit()?;
    Ok(Ok(applied))
}

/// Insert or replace an entry in one statement (one round trip, committed by itself outside
/// a transaction): the scope's shared lock (see the module's notes), its scope row and tag
/// set made if missing, the entry upserted. Parameters: [`put_params`].
const PUT: &str = "
WITH lock AS (SELECT pg_advisory_xact_lock_shared($13)),
scope_row AS (
    INSERT INTO ingest_scopes (key, scope) SELECT $1, $14 FROM lock
    ON CONFLICT (key) DO NOTHING),
tag_set AS (
    INSERT INTO ingest_tag_sets (id, tags) SELECT $11, $15 FROM lock WHERE $11::text IS NOT NULL
    ON CONFLICT (id) DO NOTHING)
INSERT INTO ingest_entries
    (scope, locator, parent, hash, size, mtime_ns, status, reason, chunks, mime, tags, shadowed)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM lock
ON CONFLICT (scope, locator) DO UPDATE SET
    parent = EXCLUDED.parent, hash = EXCLUDED.hash, size = EXCLUDED.size,
    mtime_ns = EXCLUDED.mtime_ns, status = EXCLUDED.status, reason = EXCLUDED.reason,
    chunks = EXCLUDED.chunks, mime = EXCLUDED.mime, tags = EXCLUDED.tags,
    shadowed = EXCLUDED.shadowed";

/// The values [`PUT`] binds, owned.
struct PutParams {
    key: String,
    scope_json: String,
    tags_id: Option<String>,
    tags_json: Option<String>,
    shadowed: Option<String>,
    size: i64,
    mtime_ns: i64,
    chunks: i64,
    lock: i64,
}

fn put_params(scope: &Scope, entry: &CatalogEntry) -> PutParams {
    let key = scope.key();
    let tags_json = (!entry.tags.is_empty())
        .then(|| serde_json::to_string(&entry.tags).ok())
        .flatten();
    PutParams {
        lock: scope_lock(&key),
        scope_json: serde_json::to_string(scope).unwrap_or_default(),
        tags_id: tags_json.as_deref().map(tag_set_id),
        tags_json,
        shadowed: (!entry.shadowed.is_empty())
            .then(|| serde_json::to_string(&entry.shadowed).ok())
            .flatten(),
        size: to_i64(entry.size),
        mtime_ns: to_i64(entry.mtime_ns),
        chunks: i64::from(entry.chunks),
        key,
    }
}

/// Run [`PUT`] for `entry` on `client` (a connection or a transaction).
fn put_on(
    client: &mut impl postgres::GenericClient,
    scope: &Scope,
    entry: &CatalogEntry,
) -> PgResult<()> {
    let p = put_params(scope, entry);
    client.execute(
        PUT,
        &[
            &p.key,
            &entry.locator,
            &entry.parent,
            &entry.hash,
            &p.size,
            &p.mtime_ns,
            &entry.status.as_str(),
            &entry.reason,
            &p.chunks,
            &entry.mime,
            &p.tags_id,
            &p.shadowed,
            &p.lock,
            &p.scope_json,
            &p.tags_json,
        ],
    )?;
    Ok(())
}

impl CatalogRecords for PgCatalog {
    fn save(&self) -> Result<()> {
        if let Some(reason) = crate::lock(&self.failed).take() {
            return Err(self.error(reason));
        }
        crate::failpoint::hit("catalog.save");
        Ok(())
    }

    fn truncate_log(&self) {}

    fn last_run(&self) -> Option<LastRun> {
        self.strings("SELECT value FROM ingest_meta WHERE key = 'last_run'", &[])
            .pop()
            .and_then(|j| serde_json::from_str(&j).ok())
    }

    fn set_last_run(&self, run: LastRun) {
        let Ok(json) = serde_json::to_string(&run) else {
            return;
        };
        self.call((), |c| {
            c.execute(
                "INSERT INTO ingest_meta (key, value) VALUES ('last_run', $1)
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                &[&json],
            )
            .map(|_| ())
        })
    }

    fn record_once(&self, key: &str, value: &str) -> Result<String> {
        let key = format!("record:{key}");
        self.try_call(|c| {
            c.execute(
                "INSERT INTO ingest_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                &[&key, &value],
            )?;
            c.query_one("SELECT value FROM ingest_meta WHERE key = $1", &[&key])?
                .try_get(0)
        })
    }
}

impl CatalogJobs for PgCatalog {
    fn shares_jobs(&self) -> bool {
        true
    }

    fn put_job(&self, job: &JobRow<'_>) -> Result<bool> {
        let JobRow {
            id,
            scope,
            name_key,
            record,
            ended_at,
            node,
        } = *job;
        self.try_call(|c| {
            c.execute(
                "INSERT INTO ingest_jobs (id, scope, name_key, record, ended_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record, ended_at = EXCLUDED.ended_at
                 WHERE ingest_jobs.ended_at IS NULL AND ingest_jobs.owner IS NOT DISTINCT FROM $6",
                &[&id, &scope, &name_key, &record, &ended_at, &node],
            )
            .map(|n| n == 1)
        })
    }

    fn name_has_open_jobs(&self, name_key: &str) -> Result<bool> {
        self.try_call(|c| {
            c.query_one(
                "SELECT EXISTS (SELECT 1 FROM ingest_jobs WHERE ended_at IS NULL AND name_key = $1)",
                &[&name_key],
            )?
            .try_get::<_, bool>(0)
        })
    }

    fn job(&self, id: &str) -> Option<String> {
        self.strings("SELECT record FROM ingest_jobs WHERE id = $1", &[&id])
            .pop()
    }

    fn claim_jobs(&self, node: &str, lease: Duration, limit: usize) -> Result<Vec<String>> {
        let (lease, limit) = (
            lease.as_secs_f64(),
            i64::try_from(limit).unwrap_or(i64::MAX),
        );
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.try_call(|c| {
            let mut tx = c.transaction()?;
            tx.execute(&format!("SELECT pg_advisory_xact_lock({QUEUE_LOCK})"), &[])?;
            // In the order accepted (an UPDATE returns its rows in no promised order).
            let mut records = tx
                .query(CLAIM, &[&node, &lease, &limit])?
                .iter()
                .map(|r| Ok((r.try_get::<_, i64>(1)?, r.try_get::<_, String>(0)?)))
                .collect::<PgResult<Vec<(i64, String)>>>()?;
            tx.commit()?;
            records.sort_unstable_by_key(|(seq, _)| *seq);
            Ok(records.into_iter().map(|(_, r)| r).collect())
        })
    }

    fn renew_jobs(&self, node: &str, lease: Duration, ids: &[String]) -> Result<()> {
        let lease = lease.as_secs_f64();
        self.try_call(|c| {
            c.execute(
                "UPDATE ingest_jobs SET lease_until = now() + make_interval(secs => $2)
                 WHERE owner = $1 AND ended_at IS NULL AND id = ANY($3)",
                &[&node, &lease, &ids],
            )
            .map(|_| ())
        })
    }

    fn release_jobs(&self, node: &str) -> Result<()> {
        self.try_call(|c| {
            c.execute(
                "UPDATE ingest_jobs SET owner = NULL, lease_until = NULL
                 WHERE owner = $1 AND ended_at IS NULL",
                &[&node],
            )
            .map(|_| ())
        })
    }

    fn open_jobs(&self, scopes: &[String]) -> Result<u64> {
        self.try_call(|c| {
            let n: i64 = c
                .query_one(
                    "SELECT count(*) FROM ingest_jobs WHERE ended_at IS NULL AND scope = ANY($1)",
                    &[&scopes],
                )?
                .try_get(0)?;
            Ok(n.max(0) as u64)
        })
    }

    fn forget_jobs_ended_before(&self, t: f64) {
        self.call((), |c| {
            c.execute(
                "DELETE FROM ingest_jobs WHERE ended_at IS NOT NULL AND ended_at < $1",
                &[&t],
            )
            .map(|_| ())
        })
    }
}

impl CatalogEntries for PgCatalog {
    fn get(&self, scope: &Scope, locator: &str) -> Option<CatalogEntry> {
        let key = scope.key();
        self.query_entries("e.scope = $1 AND e.locator = $2", &[&key, &locator])
            .pop()
    }

    fn put(&self, scope: &Scope, entry: CatalogEntry) {
        self.call((), |c| put_on(c, scope, &entry))
    }

    fn remove(&self, scope: &Scope, locator: &str) -> Option<CatalogEntry> {
        let key = scope.key();
        let sql = format!(
            "WITH d AS (DELETE FROM ingest_entries WHERE scope = $1 AND locator = $2 RETURNING *)
             SELECT {ENTRY_COLUMNS} FROM d e LEFT JOIN ingest_tag_sets t ON t.id = e.tags"
        );
        let old = self
            .call(None, |c| {
                c.query_opt(sql.as_str(), &[&key, &locator])?
                    .map(|r| row_of(&r))
                    .transpose()
            })
            .map(entry_of)?;
        // A scope left without entries goes, under its exclusive lock: a write to it on
        // another node either committed before (its entry is seen) or waits and makes the
        // scope again.
        self.call((), |c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&scope_lock(&key)])?;
            tx.execute(
                "DELETE FROM ingest_scopes WHERE key = $1
                 AND NOT EXISTS (SELECT 1 FROM ingest_entries WHERE scope = $1)",
                &[&key],
            )?;
            tx.commit()
        });
        Some(old)
    }

    fn locators_with_hash(&self, scope: &Scope, hash: &str) -> Vec<String> {
        let key = scope.key();
        self.strings(
            "SELECT locator FROM ingest_entries
             WHERE scope = $1 AND hash = $2 AND status = 'indexed' ORDER BY locator",
            &[&key, &hash],
        )
    }

    fn repeated_under(&self, scope: &Scope, prefix: &str, max: usize) -> Vec<String> {
        let key = scope.key();
        let end = prefix_end(prefix);
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        self.strings(
            "SELECT e.hash FROM ingest_entries e
             WHERE e.scope = $1 AND e.status = 'indexed' AND e.hash IS NOT NULL
               AND e.locator >= $2 AND ($3::text IS NULL OR e.locator < $3)
               AND starts_with(e.locator, $2)
             GROUP BY e.hash
             HAVING (SELECT count(*) FROM ingest_entries f
                     WHERE f.scope = $1 AND f.hash = e.hash AND f.status = 'indexed') > 1
             ORDER BY e.hash LIMIT $4",
            &[&key, &prefix, &end, &max],
        )
    }

    fn holders(&self, scope: &Scope, hash: &str) -> Holders {
        bounded_holders(
            self.locators_with_hash(scope, hash),
            self.tags_of_content(scope, hash),
        )
    }

    fn scopes(&self) -> Vec<Scope> {
        let mut scopes: Vec<Scope> = self
            .strings(
                "SELECT s.scope FROM ingest_scopes s
                 WHERE EXISTS (SELECT 1 FROM ingest_entries e WHERE e.scope = s.key)",
                &[],
            )
            .iter()
            .filter_map(|s| serde_json::from_str(s).ok())
            .collect();
        scopes.sort_by_key(Scope::key);
        scopes
    }

    fn is_empty(&self) -> bool {
        self.count(
            "SELECT count(*) FROM (SELECT 1 FROM ingest_entries LIMIT 1) one",
            &[],
        ) == 0
    }

    fn top_level(&self) -> Vec<(Scope, String)> {
        self.call(Vec::new(), |c| {
            c.query(
                "SELECT s.scope, e.locator FROM ingest_entries e
                 JOIN ingest_scopes s ON s.key = e.scope WHERE e.parent IS NULL",
                &[],
            )?
            .iter()
            .map(|r| Ok((r.try_get::<_, String>(0)?, r.try_get::<_, String>(1)?)))
            .collect::<PgResult<Vec<_>>>()
        })
        .into_iter()
        .filter_map(|(s, l)| Some((serde_json::from_str(&s).ok()?, l)))
        .collect()
    }

    fn entries(&self, scope: &Scope) -> Vec<CatalogEntry> {
        let key = scope.key();
        self.query_entries("e.scope = $1 ORDER BY e.locator", &[&key])
    }

    fn wanting_cards(&self, scope: &Scope) -> Vec<CatalogEntry> {
        let key = scope.key();
        self.query_entries(
            "e.scope = $1 AND e.status != 'indexed' AND e.chunks = 0 ORDER BY e.locator",
            &[&key],
        )
    }

    fn set_card_stored(&self, scope: &Scope, entry: &CatalogEntry) -> bool {
        let key = scope.key();
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM ingest_entries e
             LEFT JOIN ingest_tag_sets t ON t.id = e.tags
             WHERE e.scope = $1 AND e.locator = $2 FOR UPDATE OF e"
        );
        self.call(false, |c| {
            let mut tx = c.transaction()?;
            let now = tx
                .query_opt(sql.as_str(), &[&key, &entry.locator])?
                .map(|r| row_of(&r))
                .transpose()?
                .map(entry_of);
            let stored = matches!(&now, Some(e) if e == entry && e.wants_card());
            if stored {
                tx.execute(
                    "UPDATE ingest_entries SET chunks = 1 WHERE scope = $1 AND locator = $2",
                    &[&key, &entry.locator],
                )?;
            }
            tx.commit()?;
            Ok(stored)
        })
    }

    fn set_card_missing(&self, scope: &Scope, locator: &str) {
        let key = scope.key();
        self.call((), |c| {
            c.execute(
                "UPDATE ingest_entries SET chunks = 0
                 WHERE scope = $1 AND locator = $2 AND status != 'indexed'",
                &[&key, &locator],
            )
            .map(|_| ())
        })
    }

    fn under(&self, scope: &Scope, prefix: &str) -> Vec<CatalogEntry> {
        let key = scope.key();
        let end = prefix_end(prefix);
        let mut found = self.query_entries(
            "e.scope = $1 AND e.locator >= $2 AND ($3::text IS NULL OR e.locator < $3)
             ORDER BY e.locator",
            &[&key, &prefix, &end],
        );
        found.retain(|e| e.locator.starts_with(prefix));
        found
    }

    fn member_names(
        &self,
        scope: &Scope,
        locator: &str,
        max: usize,
    ) -> (Vec<String>, usize, usize) {
        let key = scope.key();
        let prefix = format!("{locator}{}", extractors::MEMBER_SEPARATOR);
        let end = prefix_end(&prefix);
        let range = "scope = $1 AND locator >= $2 AND ($3::text IS NULL OR locator < $3)";
        let (count, unread) = self.call((0i64, 0i64), |c| {
            let r = c.query_one(
                &format!(
                    "SELECT count(*), count(*) FILTER (WHERE status IN ('failed', 'skipped'))
                     FROM ingest_entries WHERE {range}"
                ),
                &[&key, &prefix, &end],
            )?;
            Ok((r.try_get(0)?, r.try_get(1)?))
        });
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let names = self
            .strings(
                &format!(
                    "SELECT locator FROM ingest_entries WHERE {range} ORDER BY locator LIMIT $4"
                ),
                &[&key, &prefix, &end, &limit],
            )
            .into_iter()
            .filter_map(|l| l.get(prefix.len()..).map(str::to_string))
            .collect();
        (
            names,
            usize::try_from(count).unwrap_or(0),
            usize::try_from(unread).unwrap_or(0),
        )
    }

    fn len_of(&self, scope: &Scope) -> usize {
        let key = scope.key();
        usize::try_from(self.count(
            "SELECT count(*) FROM ingest_entries WHERE scope = $1",
            &[&key],
        ))
        .unwrap_or(usize::MAX)
    }

    fn holds(&self, scope: &Scope, locator: &str) -> bool {
        let key = scope.key();
        let nested = format!("{locator}{}", extractors::MEMBER_SEPARATOR);
        let end = prefix_end(&nested);
        self.count(
            "SELECT count(*) FROM (SELECT 1 FROM ingest_entries WHERE scope = $1
             AND (locator = $4 OR (locator >= $2 AND ($3::text IS NULL OR locator < $3)))
             LIMIT 1) one",
            &[&key, &nested, &end, &locator],
        ) > 0
    }

    fn members_of(&self, scope: &Scope, parent: &str) -> Vec<CatalogEntry> {
        let key = scope.key();
        self.query_entries(
            "e.scope = $1 AND e.parent = $2 ORDER BY e.locator",
            &[&key, &parent],
        )
    }

    fn stats(&self, scope: Option<&Scope>) -> CatalogStats {
        let key = scope.map(Scope::key);
        let by_status = self.call(Vec::new(), |c| {
            c.query(
                "SELECT status, count(*) FROM ingest_entries
                 WHERE ($1::text IS NULL OR scope = $1) GROUP BY status",
                &[&key],
            )?
            .iter()
            .map(|r| Ok((r.try_get::<_, String>(0)?, r.try_get::<_, i64>(1)?)))
            .collect::<PgResult<Vec<_>>>()
        });
        let (distinct, chunks, cards) = self.call((0i64, 0i64, 0i64), |c| {
            let r = c.query_one(
                "SELECT
                   (SELECT count(*) FROM (SELECT 1 FROM ingest_entries
                      WHERE status = 'indexed' AND hash IS NOT NULL
                      AND ($1::text IS NULL OR scope = $1) GROUP BY scope, hash) d),
                   (SELECT coalesce(sum(c), 0)::bigint FROM (SELECT max(chunks) AS c FROM ingest_entries
                      WHERE status = 'indexed' AND hash IS NOT NULL
                      AND ($1::text IS NULL OR scope = $1) GROUP BY scope, hash) d),
                   (SELECT coalesce(sum(chunks), 0)::bigint FROM ingest_entries
                      WHERE status != 'indexed' AND chunks > 0
                      AND ($1::text IS NULL OR scope = $1))",
                &[&key],
            )?;
            Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?))
        });
        CatalogStats::from_counts(by_status, distinct, chunks.saturating_add(cards))
    }
}

impl CatalogContents for PgCatalog {
    fn pack(&self, hash: &str) -> Result<Option<PackReader>> {
        let path = self.cached_pack(hash);
        if !path.is_file() {
            let bytes: Option<Vec<u8>> = self.try_call(|c| {
                c.query_opt("SELECT pack FROM ingest_contents WHERE hash = $1", &[&hash])?
                    .map(|r| r.try_get(0))
                    .transpose()
            })?;
            let Some(bytes) = bytes else {
                return Ok(None);
            };
            crate::perms::create_dir(&self.cache)?;
            // Unique per call: two threads may copy the same pack at once.
            let tmp =
                path.with_extension(format!("pack.{:032x}.tmp", crate::access::random_u128()));
            crate::perms::write_file(&tmp, &bytes)?;
            std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        }
        PackReader::open(&path).map(Some)
    }

    fn content_index(&self, hash: &str) -> Result<Option<FileContentIndex>> {
        let bytes: Option<Vec<u8>> = self.try_call(|c| {
            c.query_opt(
                "SELECT structure FROM ingest_contents WHERE hash = $1",
                &[&hash],
            )?
            .map(|r| r.try_get(0))
            .transpose()
        })?;
        bytes
            .map(|b| serde_json::from_slice(&b).map_err(|e| self.error(e)))
            .transpose()
    }

    fn held_anywhere(&self, hash: &str) -> bool {
        self.count(
            "SELECT count(*) FROM (SELECT 1 FROM ingest_entries
             WHERE hash = $1 AND status = 'indexed' LIMIT 1) one",
            &[&hash],
        ) > 0
    }

    fn drop_content_index(&self, hash: &str) -> Result<bool> {
        // The content's row is locked first: a write recording a holder of it (which locks
        // the same row) either committed before the check below sees it, or waits.
        let dropped = self.try_call(|c| {
            let mut tx = c.transaction()?;
            let present = tx
                .query_opt(
                    "SELECT 1 FROM ingest_contents WHERE hash = $1 FOR UPDATE",
                    &[&hash],
                )?
                .is_some();
            let held = tx
                .query_opt(
                    "SELECT 1 FROM ingest_entries WHERE hash = $1 AND status = 'indexed' LIMIT 1",
                    &[&hash],
                )?
                .is_some();
            if !present || held {
                tx.commit()?;
                return Ok((false, held));
            }
            tx.execute("DELETE FROM ingest_contents WHERE hash = $1", &[&hash])?;
            tx.commit()?;
            Ok((true, false))
        })?;
        if !dropped.1 {
            self.drop_cached_pack(hash)?;
        }
        Ok(dropped.0)
    }

    fn drop_unheld_content_indexes(&self) -> Result<u64> {
        let unheld: Vec<String> = self.try_call(|c| {
            c.query(
                "SELECT hash FROM ingest_contents c WHERE NOT EXISTS
                 (SELECT 1 FROM ingest_entries e WHERE e.hash = c.hash AND e.status = 'indexed')",
                &[],
            )?
            .iter()
            .map(|r| r.try_get(0))
            .collect()
        })?;
        let mut deleted = 0;
        for hash in unheld {
            if self.drop_content_index(&hash)? {
                deleted += 1;
            }
        }
        // This node's copies of packs nobody holds, and temporary files a crash left.
        let entries = match std::fs::read_dir(&self.cache) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(deleted),
            Err(e) => return Err(Error::io(&self.cache, e)),
        };
        for entry in entries {
            let path = entry.map_err(|e| Error::io(&self.cache, e))?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stale = match name.strip_suffix(".pack") {
                Some(hash) => !self.held_anywhere(hash),
                None => name.ends_with(".tmp"),
            };
            if stale {
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(&path, e)),
                }
            }
        }
        Ok(deleted)
    }

    fn write_content_and_put(
        &self,
        scope: &Scope,
        hash: &str,
        record: &ContentRecord,
        entry: CatalogEntry,
    ) -> Result<Option<CatalogEntry>> {
        crate::failpoint::check("content.write")?;
        let structure = serde_json::to_vec(&record.index).map_err(|e| self.error(e))?;
        // The content's row is written or locked (`DO UPDATE`), so a drop of it waits for
        // this transaction (see `drop_content_index`).
        self.try_call(|c| {
            let mut tx = c.transaction()?;
            tx.execute(
                "INSERT INTO ingest_contents (hash, structure, pack) VALUES ($1, $2, $3)
                 ON CONFLICT (hash) DO UPDATE SET hash = EXCLUDED.hash",
                &[&hash, &structure, &record.pack],
            )?;
            let old = tx
                .query_opt(
                    &format!(
                        "SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE e.scope = $1 AND e.locator = $2"
                    ),
                    &[&scope.key(), &entry.locator],
                )?
                .map(|r| row_of(&r))
                .transpose()?
                .map(entry_of);
            put_on(&mut tx, scope, &entry)?;
            tx.commit()?;
            Ok(old)
        })
        .inspect(|_| crate::failpoint::hit("content.written"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends_bound_every_continuation() {
        assert_eq!(prefix_end("a!/").as_deref(), Some("a!0"));
        assert_eq!(prefix_end("").as_deref(), None);
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{D7FF}").as_deref(), Some("\u{E000}"));
        for cont in ["", "x", "\u{10FFFF}\u{10FFFF}", "\u{FFFF}"] {
            let s = format!("a!/{cont}");
            assert!(s.as_str() < prefix_end("a!/").unwrap().as_str());
        }
    }

    #[test]
    fn a_catalog_url_never_shows_its_password() {
        let u: CatalogUrl = "postgres://ingest:s3cret@db.example:6543/kb"
            .parse()
            .unwrap();
        assert_eq!(u.to_string(), "postgres://ingest@db.example:6543/kb");
        assert!(!format!("{u:?}").contains("s3cret"));
        assert!("mysql://x@y/z".parse::<CatalogUrl>().is_err());
        assert!("postgres://".repeat(1000).parse::<CatalogUrl>().is_err());
    }
}
