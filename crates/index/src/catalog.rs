//! The catalog: what the index holds, per scope and locator (hash, size, mtime, status,
//! chunks), in a SQLite database beside the shard (`catalog.sqlite`): a row per entry, so a
//! write costs its rows, never the whole catalog, and its size costs no memory. Content
//! indexes live in `content/<hash>.json`, written once per content hash.

// Internal: reachable from outside only through the hidden `testing` module.
#![allow(missing_docs)]

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};

use extractors::{FileContentIndex, Scope};
use serde::{Deserialize, Serialize};

use super::objects::{ContentRecord, PackReader};
use super::Holders;
use crate::error::{Error, Result};

/// The most files a stored point names as holding its content (`locators`).
pub const MAX_HOLDERS: usize = 64;
/// The most tags a stored point carries (the union of its files' tags).
pub const MAX_HOLDER_TAGS: usize = 256;
/// The most bytes of tags a stored point carries: a content held by many files tagged
/// differently carries the first of their tags (in order) up to this, so a filter on a tag
/// past it does not find that content.
pub const MAX_HOLDER_TAG_BYTES: usize = 16 * 1024;
/// The schema of the catalog database (`PRAGMA user_version`).
const VERSION: u32 = 2;

/// Where a catalogued file stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryStatus {
    Indexed,
    Failed,
    Skipped,
    /// An archive on disk; its members are entries of their own, with it as `parent`.
    Container,
}

impl EntryStatus {
    /// Its name, as the catalog file writes it (`indexed`, `failed`, `skipped`, `container`).
    pub fn as_str(self) -> &'static str {
        match self {
            EntryStatus::Indexed => "indexed",
            EntryStatus::Failed => "failed",
            EntryStatus::Skipped => "skipped",
            EntryStatus::Container => "container",
        }
    }
}

/// One file or archive member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub locator: String,
    /// The top-level archive a member was found in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Content hash (blake3, hex); `None` for containers and unread members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    pub size: u64,
    /// Nanoseconds since the epoch, for files on disk; 0 for archive members.
    #[serde(default)]
    pub mtime_ns: u64,
    pub status: EntryStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub chunks: u32,
    /// The type detected from its bytes (a MIME type), for files that were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// User tags (`key=value`, sorted) given with the file at upload; an archive's members
    /// carry the archive's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// For a top-level archive: its members hidden by an earlier member of the same name.
    /// They are not catalogued (their locator is the earlier member's), but their ledger
    /// lines are replayed when the unchanged archive is skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shadowed: Vec<ShadowedMember>,
}

/// A ledger line for an archive member that shares its name with an earlier member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowedMember {
    pub locator: String,
    pub reason: String,
}

impl CatalogEntry {
    /// A file or member whose content is indexed as `chunks` chunks (none for an empty file).
    pub fn indexed(
        locator: impl Into<String>,
        parent: Option<String>,
        hash: impl Into<String>,
        size: u64,
        mtime_ns: u64,
        chunks: u32,
    ) -> Self {
        CatalogEntry {
            locator: locator.into(),
            parent,
            hash: Some(hash.into()),
            size,
            mtime_ns,
            status: EntryStatus::Indexed,
            reason: None,
            chunks,
            mime: None,
            tags: Vec::new(),
            shadowed: Vec::new(),
        }
    }

    /// The same entry with its detected type.
    pub fn with_mime(mut self, mime: Option<String>) -> Self {
        self.mime = mime;
        self
    }

    /// The same entry with these user tags.
    pub fn with_tags(mut self, tags: Vec<String>) -> Self {
        self.tags = tags;
        self
    }

    /// A file or member that was read (its content hash is known) but whose content is not
    /// indexed: `status` is [`EntryStatus::Failed`] or [`EntryStatus::Skipped`], for `reason`.
    pub fn unindexed(
        locator: impl Into<String>,
        parent: Option<String>,
        hash: impl Into<String>,
        size: u64,
        mtime_ns: u64,
        status: EntryStatus,
        reason: impl Into<String>,
    ) -> Self {
        CatalogEntry {
            reason: Some(reason.into()),
            status,
            ..CatalogEntry::indexed(locator, parent, hash, size, mtime_ns, 0)
        }
    }

    /// An entry without content, nor size or time: a member that was not read, or an
    /// archive member recorded with its archive's hash (`hash`), with `status` for `reason`.
    pub fn without_content(
        locator: impl Into<String>,
        parent: Option<String>,
        hash: Option<String>,
        status: EntryStatus,
        reason: impl Into<String>,
    ) -> Self {
        CatalogEntry {
            locator: locator.into(),
            parent,
            hash,
            size: 0,
            mtime_ns: 0,
            status,
            reason: Some(reason.into()),
            chunks: 0,
            mime: None,
            tags: Vec::new(),
            shadowed: Vec::new(),
        }
    }

    /// A top-level archive on disk (hash of its bytes, opened for `reason`), with the members
    /// its earlier members of the same name hid.
    pub fn container(
        locator: impl Into<String>,
        hash: impl Into<String>,
        size: u64,
        mtime_ns: u64,
        reason: impl Into<String>,
        shadowed: Vec<ShadowedMember>,
    ) -> Self {
        CatalogEntry {
            status: EntryStatus::Container,
            reason: Some(reason.into()),
            shadowed,
            ..CatalogEntry::indexed(locator, None, hash, size, mtime_ns, 0)
        }
    }

    /// The content this locator holds in the index, with its chunk count: only indexed
    /// files hold content (an archive's hash names the archive, not indexed content).
    pub fn content(&self) -> Option<(String, u32)> {
        match (self.status, &self.hash) {
            (EntryStatus::Indexed, Some(h)) => Some((h.clone(), self.chunks)),
            _ => None,
        }
    }

    /// The entry's own card in the index, once stored: an entry without content of its own
    /// (failed, skipped, an archive) is found by one card point keyed by its locator
    /// ([`entry_card_key`]); its `chunks` is 1 once that point is stored, 0 before.
    pub fn card(&self) -> Option<(String, u32)> {
        (self.status != EntryStatus::Indexed && self.chunks > 0)
            .then(|| (entry_card_key(&self.locator), self.chunks))
    }

    /// The points the entry stands for in the index, by the key they are stored under (their
    /// `content_hash`) and their count: its content's chunks, or its own card.
    pub fn points(&self) -> Option<(String, u32)> {
        self.content().or_else(|| self.card())
    }

    /// The chunks of the entry's content (0 for an entry without content, whose `chunks`
    /// counts its own card): what a ledger line or a file status says.
    pub fn content_chunks(&self) -> u32 {
        self.content().map_or(0, |(_, chunks)| chunks)
    }

    /// Whether the entry wants a card of its own and has none stored yet.
    pub fn wants_card(&self) -> bool {
        self.status != EntryStatus::Indexed && self.chunks == 0
    }
}

/// How a file ranks among the files holding the same content: by how deep in archives it
/// lies (a file given directly first), then by locator. Stable: the same files rank the same
/// whatever order they arrived in.
pub fn holder_rank(locator: &str) -> (usize, &str) {
    (
        locator.matches(extractors::MEMBER_SEPARATOR).count(),
        locator,
    )
}

/// What a point names of the files holding its content: the first [`MAX_HOLDERS`] of
/// `locators` by [`holder_rank`], and `tags` (sorted, distinct) cut to [`MAX_HOLDER_TAGS`] and
/// [`MAX_HOLDER_TAG_BYTES`]. The one rule for every catalog implementation.
pub(super) fn bounded_holders(mut locators: Vec<String>, mut tags: Vec<String>) -> Holders {
    tags.truncate(MAX_HOLDER_TAGS);
    let mut used = 0usize;
    tags.retain(|t| {
        used += t.len();
        used <= MAX_HOLDER_TAG_BYTES
    });
    locators.sort_by(|a, b| holder_rank(a).cmp(&holder_rank(b)));
    locators.truncate(MAX_HOLDERS);
    Holders { tags, locators }
}

/// The locator prefix every top-level entry at or under the folder `root` (an unescaped
/// path) starts with, and the test that keeps exactly those of the entries found under it.
/// Locators are escaped character by character, so every locator under `root` starts with
/// its escaped form (but for a final `!`, escaped only when a `/` follows).
pub(super) fn top_level_root(root: &str) -> (String, impl Fn(&CatalogEntry) -> bool + '_) {
    let root = root.trim_end_matches('/');
    let escaped = extractors::Locator::root(root).to_string();
    let prefix = escaped.trim_end_matches('!').to_string();
    let keep = move |e: &CatalogEntry| {
        e.parent.is_none()
            && e.locator
                .parse::<extractors::Locator>()
                .ok()
                .and_then(|l| l.segments.first().cloned())
                .is_some_and(|path| {
                    path == root
                        || path
                            .strip_prefix(root)
                            .is_some_and(|rest| rest.starts_with('/'))
                })
    };
    (prefix, keep)
}

/// What the `content_hash` of an entry card starts with; no content hash (hex) does.
const ENTRY_CARD_PREFIX: &str = "entry-";

/// The key the card of the entry at `locator` is stored under, in place of a content hash:
/// one card per locator and scope, never shared with (nor inherited by) content of the same
/// bytes indexed later.
pub fn entry_card_key(locator: &str) -> String {
    format!(
        "{ENTRY_CARD_PREFIX}{}",
        blake3::hash(locator.as_bytes()).to_hex()
    )
}

/// The catalog file of the earlier layout: one JSON document of every scope, rewritten whole
/// on every save. Read once, to move it into the database.
#[derive(Debug, Deserialize)]
struct LegacyCatalog {
    version: u32,
    scopes: Vec<LegacyScope>,
    #[serde(default)]
    last_run: Option<LastRun>,
}

#[derive(Debug, Deserialize)]
struct LegacyScope {
    scope: Scope,
    entries: BTreeMap<String, CatalogEntry>,
}

/// When the last run ended and what it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastRun {
    /// Seconds since the Unix epoch.
    pub finished_at: u64,
    pub summary: crate::report::Summary,
}

/// Totals for `ingest status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogStats {
    pub files: u64,
    pub indexed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub containers: u64,
    pub chunks: u64,
    pub distinct_contents: u64,
}

impl CatalogStats {
    /// Totals from entries counted by status (`indexed`, …), distinct contents and chunks.
    pub(super) fn from_counts(by_status: Vec<(String, i64)>, distinct: i64, chunks: i64) -> Self {
        let mut st = CatalogStats::default();
        for (status, n) in by_status {
            let n = to_u64(n);
            match status_of(&status) {
                EntryStatus::Indexed => st.indexed = n,
                EntryStatus::Failed => st.failed = n,
                EntryStatus::Skipped => st.skipped = n,
                EntryStatus::Container => st.containers = n,
            }
        }
        st.files = st.indexed + st.failed + st.skipped;
        st.distinct_contents = to_u64(distinct);
        st.chunks = to_u64(chunks);
        st
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS scopes (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tag_sets (
    id INTEGER PRIMARY KEY,
    tags TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS entries (
    scope INTEGER NOT NULL,
    locator TEXT NOT NULL,
    parent TEXT,
    hash TEXT,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    chunks INTEGER NOT NULL,
    mime TEXT,
    tags INTEGER,
    shadowed TEXT,
    PRIMARY KEY (scope, locator)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_by_hash ON entries(scope, hash) WHERE status = 'indexed';
CREATE INDEX IF NOT EXISTS entries_holding ON entries(hash) WHERE status = 'indexed';
CREATE INDEX IF NOT EXISTS entries_by_parent ON entries(scope, parent) WHERE parent IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_by_tags ON entries(tags) WHERE tags IS NOT NULL;
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

/// The columns of an entry, in the order [`Db::row`] reads them.
const ENTRY_COLUMNS: &str =
    "locator, parent, hash, size, mtime_ns, status, reason, chunks, mime, tags, shadowed";

/// The embedded catalog's database: a SQLite file in the data directory (`catalog.sqlite`), one row per
/// scope and locator. A write changes its own rows only: nothing that grows with every
/// tenant is rewritten by one tenant's call, and nothing of it is held in memory but the
/// scopes' and tag sets' ids. Writes gather in one transaction that [`Db::save`]
/// commits (a checkpoint); a crash loses what was not saved, as before, and the next start
/// repairs the index against it (`index/repair.rs`). Not thread-safe by itself: [`SqliteCatalog`]
/// keeps it behind a mutex.
///
/// Methods that read answer from the database; should the database fail (a full disk, a
/// damaged file), the failure is logged, the read answers nothing, and the next
/// [`Db::save`] returns the error, so the run that met it fails and is repaired.
#[derive(Debug)]
struct Db {
    dir: PathBuf,
    path: PathBuf,
    conn: Connection,
    /// A write transaction is open (committed by `save`).
    in_tx: Cell<bool>,
    /// The first failure of the database since the last save.
    failed: RefCell<Option<String>>,
    /// Scope key → id (scopes are few; rows name them by id).
    scope_ids: RefCell<HashMap<String, i64>>,
    /// Tag set id → its tags, and its JSON → id: every entry of one upload names one set,
    /// stored once.
    tag_sets: RefCell<HashMap<i64, Vec<String>>>,
    tag_ids: RefCell<HashMap<String, i64>>,
}

pub(super) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(super) fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

pub(super) fn status_of(s: &str) -> EntryStatus {
    match s {
        "indexed" => EntryStatus::Indexed,
        "failed" => EntryStatus::Failed,
        "skipped" => EntryStatus::Skipped,
        _ => EntryStatus::Container,
    }
}

/// The upper end of the range of strings starting with `prefix` (exclusive): strings compare
/// as bytes, and no UTF-8 text continues `prefix` with a byte above `0xF4`.
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    end.push(0xFF);
    end
}

/// One entry's row, as read: its tag set as the database names it (`T`), then its shadowed
/// members' JSON.
pub(super) type Row<T> = (
    String,
    Option<String>,
    Option<String>,
    i64,
    i64,
    String,
    Option<String>,
    i64,
    Option<String>,
    Option<T>,
    Option<String>,
);

/// The entry a row holds, its tag set read by `tags`: the one reading of a row for every
/// catalog implementation.
pub(super) fn entry_of_row<T>(
    row: Row<T>,
    tags: impl FnOnce(Option<T>) -> Vec<String>,
) -> CatalogEntry {
    let (locator, parent, hash, size, mtime_ns, status, reason, chunks, mime, tag_set, shadowed) =
        row;
    CatalogEntry {
        locator,
        parent,
        hash,
        size: to_u64(size),
        mtime_ns: to_u64(mtime_ns),
        status: status_of(&status),
        reason,
        chunks: u32::try_from(chunks).unwrap_or(0),
        mime,
        tags: tags(tag_set),
        shadowed: shadowed
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
    }
}

impl Db {
    /// Open the catalog in `data_dir` (made on first use; a catalog of the earlier layout,
    /// `catalog.json`, is moved into it then).
    pub fn load(data_dir: &Path) -> Result<Self> {
        let path = crate::DataDir::at(data_dir).catalog();
        let err = |e: rusqlite::Error| Error::Catalog {
            path: path.clone(),
            reason: e.to_string(),
        };
        let fresh = !path.exists();
        if fresh {
            // Owner-only from the start.
            crate::perms::create_file(&path)?;
        }
        let conn = Connection::open(&path).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        // Deleted rows are overwritten, not left in free pages: what a tenant deletes (an
        // ended workflow, a removed file) leaves none of its names behind.
        conn.pragma_update(None, "secure_delete", "ON")
            .map_err(err)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        match version {
            0 => {
                conn.execute_batch(SCHEMA).map_err(err)?;
                conn.pragma_update(None, "user_version", i64::from(VERSION))
                    .map_err(err)?;
            }
            v if v == i64::from(VERSION) => {}
            other => {
                return Err(Error::Catalog {
                    path,
                    reason: format!(
                        "unsupported catalog version {other} (this ingest reads {VERSION}): a \
                         newer ingest wrote it"
                    ),
                })
            }
        }
        let catalog = Db {
            dir: data_dir.to_path_buf(),
            path,
            conn,
            in_tx: Cell::new(false),
            failed: RefCell::new(None),
            scope_ids: RefCell::new(HashMap::new()),
            tag_sets: RefCell::new(HashMap::new()),
            tag_ids: RefCell::new(HashMap::new()),
        };
        catalog.load_ids()?;
        let legacy = crate::DataDir::at(data_dir).legacy_catalog();
        if legacy.is_file() {
            catalog.import_legacy(&legacy)?;
        }
        Ok(catalog)
    }

    fn db_error(&self, e: rusqlite::Error) -> Error {
        Error::Catalog {
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }

    /// Note a failure of the database: logged now, returned by the next save.
    fn fail(&self, e: rusqlite::Error) {
        tracing::error!("catalog {}: {e}", self.path.display());
        let mut failed = self.failed.borrow_mut();
        if failed.is_none() {
            *failed = Some(e.to_string());
        }
    }

    /// The value of `r`, or `default` after noting its failure.
    fn or_fail<T>(&self, r: rusqlite::Result<T>, default: T) -> T {
        r.unwrap_or_else(|e| {
            self.fail(e);
            default
        })
    }

    /// The scopes' and tag sets' ids, read once.
    fn load_ids(&self) -> Result<()> {
        for (id, key) in self.id_pairs("SELECT id, key FROM scopes")? {
            self.scope_ids.borrow_mut().insert(key, id);
        }
        for (id, json) in self.id_pairs("SELECT id, tags FROM tag_sets")? {
            let tags: Vec<String> = serde_json::from_str(&json).unwrap_or_default();
            self.tag_sets.borrow_mut().insert(id, tags);
            self.tag_ids.borrow_mut().insert(json, id);
        }
        Ok(())
    }

    /// The (id, text) rows `sql` selects.
    fn id_pairs(&self, sql: &str) -> Result<Vec<(i64, String)>> {
        let rows: rusqlite::Result<Vec<(i64, String)>> =
            self.conn.prepare(sql).and_then(|mut stmt| {
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            });
        rows.map_err(|e| self.db_error(e))
    }

    /// Open the write transaction if none is (the next save commits it).
    fn begin(&self) -> bool {
        if self.in_tx.get() {
            return true;
        }
        match self.conn.execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => {
                self.in_tx.set(true);
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// Move the catalog file of the earlier layout into the database (one transaction), then
    /// rename it `catalog.json.migrated` (kept for a downgrade by hand).
    fn import_legacy(&self, legacy: &Path) -> Result<()> {
        let bytes = std::fs::read(legacy).map_err(|e| Error::io(legacy, e))?;
        let disk: LegacyCatalog = serde_json::from_slice(&bytes).map_err(|e| Error::Catalog {
            path: legacy.to_path_buf(),
            reason: e.to_string(),
        })?;
        if disk.version != 1 {
            return Err(Error::Catalog {
                path: legacy.to_path_buf(),
                reason: format!("unsupported catalog version {}", disk.version),
            });
        }
        let mut moved = 0usize;
        for s in disk.scopes {
            for (_, entry) in s.entries {
                self.put(&s.scope, entry);
                moved += 1;
            }
        }
        if let Some(run) = disk.last_run {
            self.set_last_run(run);
        }
        self.save()?;
        let aside = legacy.with_extension("json.migrated");
        std::fs::rename(legacy, &aside).map_err(|e| Error::io(legacy, e))?;
        tracing::info!(
            "moved {moved} catalog entries from {} into {}",
            legacy.display(),
            self.path.display()
        );
        Ok(())
    }

    /// Commit what was written since the last save (a checkpoint). A failure of the database
    /// since then is returned here.
    pub fn save(&self) -> Result<()> {
        if let Some(reason) = self.failed.borrow_mut().take() {
            if self.in_tx.replace(false) {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            return Err(Error::Catalog {
                path: self.path.clone(),
                reason,
            });
        }
        if self.in_tx.replace(false) {
            self.conn
                .execute_batch("COMMIT")
                .map_err(|e| self.db_error(e))?;
        }
        crate::failpoint::hit("catalog.save");
        Ok(())
    }

    /// Copy what the write-ahead log holds into the database and empty the log (after
    /// deletions that must leave nothing behind: the log keeps earlier versions of pages
    /// until then). Best effort: a reader in another process may keep part of the log.
    pub fn truncate_log(&self) {
        if self.in_tx.get() {
            return;
        }
        if let Err(e) = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        {
            tracing::warn!("catalog {}: emptying the log: {e}", self.path.display());
        }
    }

    /// The last run that ended, if any.
    pub fn last_run(&self) -> Option<LastRun> {
        let json: Option<String> = self.or_fail(
            self.conn
                .query_row("SELECT value FROM meta WHERE key = 'last_run'", [], |r| {
                    r.get(0)
                })
                .optional(),
            None,
        );
        json.and_then(|j| serde_json::from_str(&j).ok())
    }

    pub fn set_last_run(&self, run: LastRun) {
        let Ok(json) = serde_json::to_string(&run) else {
            return;
        };
        if !self.begin() {
            return;
        }
        let r = self.conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_run', ?1)",
            [json],
        );
        self.or_fail(r.map(|_| ()), ());
    }

    /// See [`CatalogRecords::record_once`]; committed at once (with what was written before it).
    pub fn record_once(&self, key: &str, value: &str) -> Result<String> {
        let key = format!("record:{key}");
        if self.begin() {
            let r = self.conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, ?2)",
                params![key, value],
            );
            self.or_fail(r.map(|_| ()), ());
        }
        self.save()?;
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [&key], |r| {
                r.get(0)
            })
            .map_err(|e| self.db_error(e))
    }

    /// The id of `scope`, if it has entries (or was made).
    fn scope_id(&self, scope: &Scope) -> Option<i64> {
        self.scope_ids.borrow().get(&scope.key()).copied()
    }

    /// The id of `scope`, made if need be (within the write transaction).
    fn make_scope_id(&self, scope: &Scope) -> Option<i64> {
        if let Some(id) = self.scope_id(scope) {
            return Some(id);
        }
        let key = scope.key();
        let json = serde_json::to_string(scope).ok()?;
        let r = self
            .conn
            .execute(
                "INSERT INTO scopes (key, scope) VALUES (?1, ?2)",
                params![key, json],
            )
            .map(|_| self.conn.last_insert_rowid());
        let id = self.or_fail(r.map(Some), None)?;
        self.scope_ids.borrow_mut().insert(key, id);
        Some(id)
    }

    /// The id of the tag set `tags` (stored once however many entries carry it); `None` for
    /// no tags.
    fn tag_id(&self, tags: &[String]) -> Option<i64> {
        if tags.is_empty() {
            return None;
        }
        let json = serde_json::to_string(tags).ok()?;
        if let Some(id) = self.tag_ids.borrow().get(&json) {
            return Some(*id);
        }
        let r = self
            .conn
            .execute("INSERT INTO tag_sets (tags) VALUES (?1)", [&json])
            .map(|_| self.conn.last_insert_rowid());
        let id = self.or_fail(r.map(Some), None)?;
        self.tag_sets.borrow_mut().insert(id, tags.to_vec());
        self.tag_ids.borrow_mut().insert(json, id);
        Some(id)
    }

    fn tags_of_id(&self, id: Option<i64>) -> Vec<String> {
        id.and_then(|id| self.tag_sets.borrow().get(&id).cloned())
            .unwrap_or_default()
    }

    fn entry_of(&self, row: Row<i64>) -> CatalogEntry {
        entry_of_row(row, |id| self.tags_of_id(id))
    }

    fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row<i64>> {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
            r.get(7)?,
            r.get(8)?,
            r.get(9)?,
            r.get(10)?,
        ))
    }

    /// The entries a query selects (`sql` selects [`ENTRY_COLUMNS`]).
    fn query_entries(&self, sql: &str, params: impl rusqlite::Params) -> Vec<CatalogEntry> {
        let rows: rusqlite::Result<Vec<Row<i64>>> = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut stmt| stmt.query_map(params, Self::row)?.collect());
        self.or_fail(rows, Vec::new())
            .into_iter()
            .map(|r| self.entry_of(r))
            .collect()
    }

    /// Strings a query selects (its first column).
    fn query_strings(&self, sql: &str, params: impl rusqlite::Params) -> Vec<String> {
        let rows: rusqlite::Result<Vec<String>> = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut stmt| stmt.query_map(params, |r| r.get(0))?.collect());
        self.or_fail(rows, Vec::new())
    }

    fn count(&self, sql: &str, params: impl rusqlite::Params) -> u64 {
        let n: rusqlite::Result<i64> = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut stmt| stmt.query_row(params, |r| r.get(0)));
        to_u64(self.or_fail(n, 0))
    }

    pub fn get(&self, scope: &Scope, locator: &str) -> Option<CatalogEntry> {
        let id = self.scope_id(scope)?;
        self.query_entries(
            &format!("SELECT {ENTRY_COLUMNS} FROM entries WHERE scope = ?1 AND locator = ?2"),
            params![id, locator],
        )
        .pop()
    }

    /// Insert or replace an entry. A member's tags are its upload's: the set is stored once
    /// and named by every entry carrying it.
    pub fn put(&self, scope: &Scope, entry: CatalogEntry) {
        if !self.begin() {
            return;
        }
        let Some(id) = self.make_scope_id(scope) else {
            return;
        };
        let tags = self.tag_id(&entry.tags);
        let shadowed = (!entry.shadowed.is_empty())
            .then(|| serde_json::to_string(&entry.shadowed).ok())
            .flatten();
        let r = self
            .conn
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO entries (scope, {ENTRY_COLUMNS})
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
            ))
            .and_then(|mut stmt| {
                stmt.execute(params![
                    id,
                    entry.locator,
                    entry.parent,
                    entry.hash,
                    to_i64(entry.size),
                    to_i64(entry.mtime_ns),
                    entry.status.as_str(),
                    entry.reason,
                    i64::from(entry.chunks),
                    entry.mime,
                    tags,
                    shadowed
                ])
            });
        self.or_fail(r.map(|_| ()), ());
    }

    /// Drop the entry of `locator`; a scope left without entries is dropped too (nothing
    /// of it stays in the catalog, e.g. of an ended workflow).
    pub fn remove(&self, scope: &Scope, locator: &str) -> Option<CatalogEntry> {
        let old = self.get(scope, locator)?;
        let id = self.scope_id(scope)?;
        if !self.begin() {
            return None;
        }
        let r = self.conn.execute(
            "DELETE FROM entries WHERE scope = ?1 AND locator = ?2",
            params![id, locator],
        );
        self.or_fail(r.map(|_| ()), ());
        let empty = self.count(
            "SELECT count(*) FROM (SELECT 1 FROM entries WHERE scope = ?1 LIMIT 1)",
            [id],
        ) == 0;
        if empty {
            let r = self.conn.execute("DELETE FROM scopes WHERE id = ?1", [id]);
            self.or_fail(r.map(|_| ()), ());
            self.scope_ids.borrow_mut().remove(&scope.key());
        }
        Some(old)
    }

    /// Indexed locators holding content `hash`, in locator order.
    pub fn locators_with_hash(&self, scope: &Scope, hash: &str) -> Vec<String> {
        let Some(id) = self.scope_id(scope) else {
            return Vec::new();
        };
        self.query_strings(
            "SELECT locator FROM entries WHERE scope = ?1 AND hash = ?2 AND status = 'indexed'
             ORDER BY locator",
            params![id, hash],
        )
    }

    /// The contents held by indexed entries of `scope` whose locator starts with `prefix`
    /// that another indexed entry of `scope` holds too (at most `max`, in hash order): the
    /// contents whose points may not name the files under `prefix` ([`CatalogEntries::repeated_under`]).
    pub fn repeated_under(&self, scope: &Scope, prefix: &str, max: usize) -> Vec<String> {
        let Some(id) = self.scope_id(scope) else {
            return Vec::new();
        };
        self.query_strings(
            "SELECT e.hash FROM entries e
             WHERE e.scope = ?1 AND e.status = 'indexed' AND e.hash IS NOT NULL
               AND e.locator >= ?2 AND e.locator < CAST(?3 AS TEXT)
               AND substr(e.locator, 1, length(?2)) = ?2
             GROUP BY e.hash
             HAVING (SELECT count(*) FROM entries f
                     WHERE f.scope = ?1 AND f.hash = e.hash AND f.status = 'indexed') > 1
             ORDER BY e.hash LIMIT ?4",
            params![
                id,
                prefix,
                prefix_end(prefix),
                i64::try_from(max).unwrap_or(i64::MAX)
            ],
        )
    }

    /// The files of `scope` holding content `hash` as its points name them: the first
    /// [`MAX_HOLDERS`] (every one stays in the catalog), and the union of all their tags (at
    /// most [`MAX_HOLDER_TAGS`] and [`MAX_HOLDER_TAG_BYTES`]). A payload's size never grows
    /// with the number of copies of a file, so an archive of ten thousand identical members
    /// costs ten thousand small writes, not a quadratic amount.
    ///
    /// Which files are named does not depend on the order they arrived in: holders are
    /// ranked by [`holder_rank`] (files given directly before archive members, shallower
    /// members before deeper ones, then locator order), so a hit shows the same locator for
    /// the same content on every run and every machine.
    pub fn holders(&self, scope: &Scope, hash: &str) -> Holders {
        bounded_holders(
            self.locators_with_hash(scope, hash),
            self.tags_of_content(scope, hash),
        )
    }

    /// The union of the tags of the files of `scope` holding content `hash`, sorted.
    fn tags_of_content(&self, scope: &Scope, hash: &str) -> Vec<String> {
        let Some(id) = self.scope_id(scope) else {
            return Vec::new();
        };
        let rows: rusqlite::Result<Vec<i64>> = self
            .conn
            .prepare_cached(
                "SELECT DISTINCT tags FROM entries
                 WHERE scope = ?1 AND hash = ?2 AND status = 'indexed' AND tags IS NOT NULL",
            )
            .and_then(|mut stmt| stmt.query_map(params![id, hash], |r| r.get(0))?.collect());
        let tags: BTreeSet<String> = self
            .or_fail(rows, Vec::new())
            .into_iter()
            .flat_map(|id| self.tags_of_id(Some(id)))
            .collect();
        tags.into_iter().collect()
    }

    /// The scopes with entries.
    pub fn scopes(&self) -> Vec<Scope> {
        let mut scopes: Vec<Scope> = self
            .query_strings("SELECT scope FROM scopes ORDER BY key", [])
            .iter()
            .filter_map(|s| serde_json::from_str(s).ok())
            .collect();
        scopes.sort_by_key(Scope::key);
        scopes
    }

    /// Whether the catalog holds any entry.
    pub fn is_empty(&self) -> bool {
        self.count("SELECT count(*) FROM (SELECT 1 FROM entries LIMIT 1)", []) == 0
    }

    /// Every top-level entry of every scope (files and archives as they were given or
    /// uploaded): its scope and locator.
    pub fn top_level(&self) -> Vec<(Scope, String)> {
        let rows: rusqlite::Result<Vec<(String, String)>> = self
            .conn
            .prepare_cached(
                "SELECT s.scope, e.locator FROM entries e JOIN scopes s ON s.id = e.scope
                 WHERE e.parent IS NULL",
            )
            .and_then(|mut stmt| {
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            });
        self.or_fail(rows, Vec::new())
            .into_iter()
            .filter_map(|(s, l)| Some((serde_json::from_str(&s).ok()?, l)))
            .collect()
    }

    /// Every entry of `scope`, in locator order.
    pub fn entries(&self, scope: &Scope) -> Vec<CatalogEntry> {
        let Some(id) = self.scope_id(scope) else {
            return Vec::new();
        };
        self.query_entries(
            &format!("SELECT {ENTRY_COLUMNS} FROM entries WHERE scope = ?1 ORDER BY locator"),
            [id],
        )
    }

    /// The entries of `scope` that want a card of their own ([`CatalogEntry::wants_card`]).
    pub fn wanting_cards(&self, scope: &Scope) -> Vec<CatalogEntry> {
        let Some(id) = self.scope_id(scope) else {
            return Vec::new();
        };
        self.query_entries(
            &format!(
                "SELECT {ENTRY_COLUMNS} FROM entries
                 WHERE scope = ?1 AND status != 'indexed' AND chunks = 0 ORDER BY locator"
            ),
            [id],
        )
    }

    /// Record that the card of `entry` is stored (its `chunks` becomes 1), if the catalog
    /// still holds `entry` as it was; whether it did.
    pub fn set_card_stored(&self, scope: &Scope, entry: &CatalogEntry) -> bool {
        match self.get(scope, &entry.locator) {
            Some(e) if &e == entry && e.wants_card() => {
                let mut stored = e;
                stored.chunks = 1;
                self.put(scope, stored);
                true
            }
            _ => false,
        }
    }

    /// Record that the card of the entry at `locator` is not stored (its `chunks` becomes 0,
    /// so the next run writes it).
    pub fn set_card_missing(&self, scope: &Scope, locator: &str) {
        if let Some(mut e) = self
            .get(scope, locator)
            .filter(|e| e.status != EntryStatus::Indexed)
        {
            e.chunks = 0;
            self.put(scope, e);
        }
    }

    /// The entries of `scope` whose locator starts with `prefix`, in locator order (a range
    /// of the primary key: the cost is what is found, not the scope's size).
    pub fn under(&self, scope: &Scope, prefix: &str) -> Vec<CatalogEntry> {
        let Some(id) = self.scope_id(scope) else {
            return Vec::new();
        };
        let mut found = self.query_entries(
            &format!(
                "SELECT {ENTRY_COLUMNS} FROM entries
                 WHERE scope = ?1 AND locator >= ?2 AND locator < CAST(?3 AS TEXT)
                 ORDER BY locator"
            ),
            params![id, prefix, prefix_end(prefix)],
        );
        found.retain(|e| e.locator.starts_with(prefix));
        found
    }

    /// The names of the members under archive `locator` (relative to it, in locator order,
    /// at most `max`), how many there are, and how many of them were not read (skipped or
    /// failed).
    pub fn member_names(
        &self,
        scope: &Scope,
        locator: &str,
        max: usize,
    ) -> (Vec<String>, usize, usize) {
        let Some(id) = self.scope_id(scope) else {
            return (Vec::new(), 0, 0);
        };
        let prefix = format!("{locator}{}", extractors::MEMBER_SEPARATOR);
        let range = params![id, prefix, prefix_end(&prefix)];
        let count = self.count(
            "SELECT count(*) FROM entries
             WHERE scope = ?1 AND locator >= ?2 AND locator < CAST(?3 AS TEXT)",
            range,
        );
        let unread = self.count(
            "SELECT count(*) FROM entries
             WHERE scope = ?1 AND locator >= ?2 AND locator < CAST(?3 AS TEXT)
             AND status IN ('failed', 'skipped')",
            params![id, prefix, prefix_end(&prefix)],
        );
        let names = self
            .query_strings(
                "SELECT locator FROM entries
                 WHERE scope = ?1 AND locator >= ?2 AND locator < CAST(?3 AS TEXT)
                 ORDER BY locator LIMIT ?4",
                params![
                    id,
                    prefix,
                    prefix_end(&prefix),
                    i64::try_from(max).unwrap_or(i64::MAX)
                ],
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

    /// How many entries (files, archives, members) `scope` holds.
    pub fn len_of(&self, scope: &Scope) -> usize {
        let Some(id) = self.scope_id(scope) else {
            return 0;
        };
        usize::try_from(self.count("SELECT count(*) FROM entries WHERE scope = ?1", [id]))
            .unwrap_or(usize::MAX)
    }

    /// Whether `scope` holds `locator` or anything under `locator!/`.
    pub fn holds(&self, scope: &Scope, locator: &str) -> bool {
        let Some(id) = self.scope_id(scope) else {
            return false;
        };
        let nested = format!("{locator}{}", extractors::MEMBER_SEPARATOR);
        self.get(scope, locator).is_some()
            || self.count(
                "SELECT count(*) FROM (SELECT 1 FROM entries
                 WHERE scope = ?1 AND locator >= ?2 AND locator < CAST(?3 AS TEXT) LIMIT 1)",
                params![id, nested, prefix_end(&nested)],
            ) > 0
    }

    /// The entries whose parent is `parent`, in locator order.
    pub fn members_of(&self, scope: &Scope, parent: &str) -> Vec<CatalogEntry> {
        let Some(id) = self.scope_id(scope) else {
            return Vec::new();
        };
        self.query_entries(
            &format!(
                "SELECT {ENTRY_COLUMNS} FROM entries INDEXED BY entries_by_parent
                 WHERE scope = ?1 AND parent = ?2 AND parent IS NOT NULL
                 ORDER BY locator"
            ),
            params![id, parent],
        )
    }

    pub fn stats(&self, scope: Option<&Scope>) -> CatalogStats {
        let st = CatalogStats::default();
        let id = match scope {
            Some(s) => match self.scope_id(s) {
                Some(id) => Some(id),
                None => return st,
            },
            None => None,
        };
        // `?1 IS NULL` selects every scope.
        let rows: rusqlite::Result<Vec<(String, i64)>> = self
            .conn
            .prepare_cached(
                "SELECT status, count(*) FROM entries WHERE (?1 IS NULL OR scope = ?1)
                 GROUP BY status",
            )
            .and_then(|mut stmt| {
                stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            });
        let by_status = self.or_fail(rows, Vec::new());
        let contents: rusqlite::Result<(i64, i64)> = self
            .conn
            .prepare_cached(
                "SELECT count(*), coalesce(sum(c), 0) FROM (
                     SELECT max(chunks) AS c FROM entries
                     WHERE status = 'indexed' AND hash IS NOT NULL AND (?1 IS NULL OR scope = ?1)
                     GROUP BY scope, hash)",
            )
            .and_then(|mut stmt| stmt.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))));
        let (distinct, chunks) = self.or_fail(contents, (0, 0));
        let mut st = CatalogStats::from_counts(by_status, distinct, chunks);
        st.chunks += self.count(
            "SELECT coalesce(sum(chunks), 0) FROM entries
             WHERE status != 'indexed' AND chunks > 0 AND (?1 IS NULL OR scope = ?1)",
            [id],
        );
        st
    }

    fn content_path(&self, hash: &str) -> PathBuf {
        crate::DataDir::at(&self.dir)
            .contents()
            .join(format!("{hash}.json"))
    }

    /// Where the object pack of content `hash` lives (see `super::objects`).
    pub fn pack_path(&self, hash: &str) -> PathBuf {
        crate::DataDir::at(&self.dir)
            .contents()
            .join(format!("{hash}.pack"))
    }

    /// Store the content index and the object pack of `hash` (once; identical bytes have
    /// identical indexes). The pack is written first: a content index on disk means its pack
    /// is there too.
    pub fn write_content(&self, hash: &str, record: &ContentRecord) -> Result<()> {
        let path = self.content_path(hash);
        if path.is_file() {
            return Ok(());
        }
        crate::perms::create_dir(&crate::DataDir::at(&self.dir).contents())?;
        let pack = self.pack_path(hash);
        let tmp = pack.with_extension("pack.tmp");
        crate::perms::write_file(&tmp, &record.pack)?;
        std::fs::rename(&tmp, &pack).map_err(|e| Error::io(&pack, e))?;
        let bytes = serde_json::to_vec(&record.index).map_err(|e| Error::Catalog {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let tmp = path.with_extension("json.tmp");
        crate::perms::write_file(&tmp, &bytes)?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        crate::failpoint::hit("content.written");
        Ok(())
    }

    /// The content index of `hash`, if stored. It is shared by every scope holding these
    /// bytes: its `file_name` and `container_path` are the first holder's, never to be shown.
    pub fn content_index(&self, hash: &str) -> Result<Option<FileContentIndex>> {
        let path = self.content_path(hash);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Catalog {
                path,
                reason: e.to_string(),
            })
    }

    /// Whether an entry of any scope holds content `hash` (content indexes are shared by
    /// every scope with the same bytes).
    pub fn held_anywhere(&self, hash: &str) -> bool {
        self.count(
            "SELECT count(*) FROM (SELECT 1 FROM entries WHERE hash = ?1 AND status = 'indexed' LIMIT 1)",
            [hash],
        ) > 0
    }

    /// Delete the content index of `hash` unless an entry of some scope still holds it;
    /// whether a file was deleted. Called wherever a content's points are deleted, so that
    /// content indexes do not outlive their content.
    pub fn drop_content_index(&self, hash: &str) -> Result<bool> {
        if self.held_anywhere(hash) {
            return Ok(false);
        }
        let pack = self.pack_path(hash);
        match std::fs::remove_file(&pack) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&pack, e)),
        }
        let path = self.content_path(hash);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Delete every content index no entry holds, and temporary files a crash left in
    /// `content/`; how many files were deleted.
    pub fn drop_unheld_content_indexes(&self) -> Result<u64> {
        let dir = crate::DataDir::at(&self.dir).contents();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(&dir, e)),
        };
        let mut deleted = 0;
        for entry in entries {
            let path = entry.map_err(|e| Error::io(&dir, e))?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stale = match name
                .strip_suffix(".json")
                .or_else(|| name.strip_suffix(".pack"))
            {
                Some(hash) => !self.held_anywhere(hash),
                None => name.ends_with(".json.tmp") || name.ends_with(".pack.tmp"),
            };
            if stale {
                match std::fs::remove_file(&path) {
                    Ok(()) => deleted += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(&path, e)),
                }
            }
        }
        Ok(deleted)
    }
}

/// An upload job's row in a shared catalog ([`CatalogJobs::put_job`]).
#[derive(Debug, Clone, Copy)]
pub struct JobRow<'a> {
    /// The job's id.
    pub id: &'a str,
    /// Its scope's key.
    pub scope: &'a str,
    /// What orders it after other jobs: a hash of its scope's key and the top-level name it
    /// runs on.
    pub name_key: &'a str,
    /// Its record, as JSON.
    pub record: &'a str,
    /// When it ended (seconds since the epoch).
    pub ended_at: Option<f64>,
    /// The node writing it: `None` when a job is accepted (its row is inserted unclaimed),
    /// the node running it for its stages and its end.
    pub node: Option<&'a str>,
}

/// The name nodes sharing `catalog` write their holder records under (one writer for all):
/// `catalog <id>`, the id made by the first node and recorded in the catalog, so that every
/// node uses it whatever host name or address it reaches the database by.
pub fn shared_holder_name(catalog: &dyn Catalog) -> Result<String> {
    let id = format!("{:032x}", crate::access::random_u128());
    catalog.record_once("holder_name", &format!("catalog {id}"))
}

/// What the pipeline, the tools, the upload queue and the workflows know of the catalog:
/// the one interface to it, its four concerns together ([`CatalogRecords`],
/// [`CatalogJobs`], [`CatalogEntries`], [`CatalogContents`]; every type implementing the
/// four is a `Catalog`). Every operation takes what it needs for itself (no lock is handed
/// out); those that must see and change the catalog in one step across scopes (write a
/// content index and record its file; drop a content index nobody holds) are single
/// operations. [`SqliteCatalog`] is the embedded implementation, `PgCatalog` the shared
/// one; the conformance suite (`testkit.rs`) checks both.
pub trait Catalog: CatalogRecords + CatalogJobs + CatalogEntries + CatalogContents {}

impl<T: CatalogRecords + CatalogJobs + CatalogEntries + CatalogContents> Catalog for T {}

/// The node's own records: commits and the write-ahead log, the last run, what the index is made of (`record_once`).
pub trait CatalogRecords: Send + Sync {
    /// Commit what was written since the last save (a checkpoint). A failure of the database
    /// since then is returned here.
    fn save(&self) -> Result<()>;

    /// Copy what the write-ahead log holds into the database and empty the log (after
    /// deletions that must leave nothing behind: the log keeps earlier versions of pages
    /// until then). Best effort: a reader in another process may keep part of the log.
    fn truncate_log(&self);

    /// The last run that ended, if any.
    fn last_run(&self) -> Option<LastRun>;

    fn set_last_run(&self, run: LastRun);

    /// The value recorded under `key` (how the index is made: its store, model, recipe),
    /// recording `value` first if nothing is: the first writer's value stands, so every node
    /// of a shared catalog learns what the first one made it with.
    fn record_once(&self, key: &str, value: &str) -> Result<String>;
}

/// The upload queue several nodes share (the embedded catalog keeps none: its node's data dir holds the job files).
pub trait CatalogJobs: Send + Sync {
    /// Whether this catalog is the upload queue of many nodes: job records live in it
    /// ([`CatalogJobs::put_job`]) and every node claims jobs from it ([`CatalogJobs::claim_jobs`]).
    /// The embedded catalog is not: its node's data dir keeps the job files.
    fn shares_jobs(&self) -> bool {
        false
    }

    /// Record an upload job where every node reads it (inserted unclaimed; its record
    /// replaced while it has not ended, never after, and only by the node holding it: a
    /// node whose lease lapsed and whose job another node claimed writes nothing).
    /// `Ok(false)` when the write was refused so. Only a shared catalog keeps job rows.
    fn put_job(&self, _job: &JobRow<'_>) -> Result<bool> {
        Ok(true)
    }

    /// Whether an open job (on any node) runs on the name whose key is `name_key`.
    fn name_has_open_jobs(&self, _name_key: &str) -> Result<bool> {
        Ok(false)
    }

    /// The record [`CatalogJobs::put_job`] keeps for job `id`, if any.
    fn job(&self, _id: &str) -> Option<String> {
        None
    }

    /// Forget the job records of jobs that ended before `t` (seconds since the epoch).
    fn forget_jobs_ended_before(&self, _t: f64) {}

    /// Claim for node `node`, under a lease of `lease`, up to `limit` open jobs nobody holds
    /// (never claimed, released, or their holder's lease ran out: a node that died), oldest
    /// first; a job waits while an older open job on the same name is another node's, so the
    /// jobs of one name run in the order they were accepted. Their records (JSON).
    fn claim_jobs(&self, _node: &str, _lease: Duration, _limit: usize) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// Extend the lease of open jobs `ids` that `node` holds (those it runs: a job it
    /// holds and no longer runs is left to lapse, for another node to take).
    fn renew_jobs(&self, _node: &str, _lease: Duration, _ids: &[String]) -> Result<()> {
        Ok(())
    }

    /// Give up every open job `node` holds, for another node to claim at once (a node
    /// stopping with jobs not ended).
    fn release_jobs(&self, _node: &str) -> Result<()> {
        Ok(())
    }

    /// Open jobs (not ended, on any node) of the scopes with these keys.
    fn open_jobs(&self, _scopes: &[String]) -> Result<u64> {
        Ok(0)
    }
}

/// What each scope holds, file by file: entries, their holders and members, counts.
pub trait CatalogEntries: Send + Sync {
    fn get(&self, scope: &Scope, locator: &str) -> Option<CatalogEntry>;

    /// Insert or replace an entry. A member's tags are its upload's: the set is stored once
    /// and named by every entry carrying it.
    fn put(&self, scope: &Scope, entry: CatalogEntry);

    /// Drop the entry of `locator`; a scope left without entries is dropped too (nothing
    /// of it stays in the catalog, e.g. of an ended workflow).
    fn remove(&self, scope: &Scope, locator: &str) -> Option<CatalogEntry>;

    /// Indexed locators holding content `hash`, in locator order.
    fn locators_with_hash(&self, scope: &Scope, hash: &str) -> Vec<String>;

    /// The files of `scope` holding content `hash` as its points name them: the first
    /// [`MAX_HOLDERS`] (every one stays in the catalog), and the union of all their tags (at
    /// most [`MAX_HOLDER_TAGS`] and [`MAX_HOLDER_TAG_BYTES`]). A payload's size never grows
    /// with the number of copies of a file, so an archive of ten thousand identical members
    /// costs ten thousand small writes, not a quadratic amount.
    ///
    /// Which files are named does not depend on the order they arrived in: holders are
    /// ranked by [`holder_rank`] (files given directly before archive members, shallower
    /// members before deeper ones, then locator order), so a hit shows the same locator for
    /// the same content on every run and every machine.
    fn holders(&self, scope: &Scope, hash: &str) -> Holders;

    /// The contents held by indexed entries of `scope` whose locator starts with `prefix`
    /// that another indexed entry of `scope` holds too, at most `max`, in hash order: the
    /// only contents whose points may not name their files under `prefix` (a point names
    /// the first [`MAX_HOLDERS`] files), found with the cost of the entries under `prefix`.
    fn repeated_under(&self, scope: &Scope, prefix: &str, max: usize) -> Vec<String>;

    /// The scopes with entries.
    fn scopes(&self) -> Vec<Scope>;

    /// Whether the catalog holds any entry.
    fn is_empty(&self) -> bool;

    /// Every top-level entry of every scope (files and archives as they were given or
    /// uploaded): its scope and locator.
    fn top_level(&self) -> Vec<(Scope, String)>;

    /// Every entry of `scope`, in locator order.
    fn entries(&self, scope: &Scope) -> Vec<CatalogEntry>;

    /// The entries of `scope` that want a card of their own ([`CatalogEntry::wants_card`]).
    fn wanting_cards(&self, scope: &Scope) -> Vec<CatalogEntry>;

    /// Record that the card of `entry` is stored (its `chunks` becomes 1), if the catalog
    /// still holds `entry` as it was; whether it did.
    fn set_card_stored(&self, scope: &Scope, entry: &CatalogEntry) -> bool;

    /// Record that the card of the entry at `locator` is not stored (its `chunks` becomes 0,
    /// so the next run writes it).
    fn set_card_missing(&self, scope: &Scope, locator: &str);

    /// The entries of `scope` whose locator starts with `prefix`, in locator order (a range
    /// of the primary key: the cost is what is found, not the scope's size).
    fn under(&self, scope: &Scope, prefix: &str) -> Vec<CatalogEntry>;

    /// The names of the members under archive `locator` (relative to it, in locator order,
    /// at most `max`), how many there are, and how many of them were not read (skipped or
    /// failed).
    fn member_names(&self, scope: &Scope, locator: &str, max: usize)
        -> (Vec<String>, usize, usize);

    /// Drop `locator` so the next sync indexes it again; an archive member also drops its
    /// archive's entry, so that the archive is opened again rather than taken as unchanged.
    fn forget(&self, scope: &Scope, locator: &str) {
        if let Some(e) = self.remove(scope, locator) {
            if let Some(parent) = e.parent {
                self.remove(scope, &parent);
            }
        }
    }

    /// Top-level entries (files given on disk, not archive members) at `root` or inside the
    /// folder `root` (an unescaped path).
    fn top_level_under(&self, scope: &Scope, root: &str) -> Vec<CatalogEntry> {
        let (prefix, keep) = top_level_root(root);
        let mut found = self.under(scope, &prefix);
        found.retain(keep);
        found
    }

    /// How many entries (files, archives, members) `scope` holds.
    fn len_of(&self, scope: &Scope) -> usize;

    /// How many entries the owner of `scope` holds, shared or not: what a per-caller quota
    /// (`max_files_per_key`) counts, for uploads and pulls alike.
    fn len_of_owner(&self, scope: &Scope) -> usize {
        [false, true]
            .into_iter()
            .map(|is_shared| {
                self.len_of(&Scope {
                    is_shared,
                    ..scope.clone()
                })
            })
            .sum()
    }

    /// Whether `scope` holds `locator` or anything under `locator!/`.
    fn holds(&self, scope: &Scope, locator: &str) -> bool;

    /// The entries whose parent is `parent`, in locator order.
    fn members_of(&self, scope: &Scope, parent: &str) -> Vec<CatalogEntry>;

    fn stats(&self, scope: Option<&Scope>) -> CatalogStats;
}

/// The content indexes and object packs, shared by every scope holding the same bytes; writing one and recording its file is one step.
pub trait CatalogContents: Send + Sync {
    /// The object pack of content `hash` (see `super::objects`), if stored.
    fn pack(&self, hash: &str) -> Result<Option<PackReader>>;

    /// The content index of `hash`, if stored. It is shared by every scope holding these
    /// bytes: its `file_name` and `container_path` are the first holder's, never to be shown.
    fn content_index(&self, hash: &str) -> Result<Option<FileContentIndex>>;

    /// Whether an entry of any scope holds content `hash` (content indexes are shared by
    /// every scope with the same bytes).
    fn held_anywhere(&self, hash: &str) -> bool;

    /// Delete the content index of `hash` unless an entry of some scope still holds it;
    /// whether a file was deleted. Called wherever a content's points are deleted, so that
    /// content indexes do not outlive their content.
    fn drop_content_index(&self, hash: &str) -> Result<bool>;

    /// Delete every content index no entry holds, and temporary files a crash left in
    /// `content/`; how many files were deleted.
    fn drop_unheld_content_indexes(&self) -> Result<u64>;

    /// Write content `hash`'s index and object pack, then record `entry` in `scope`, in one
    /// step: a run of another scope dropping the content indexes nobody holds (they are
    /// shared by identical bytes) sees this one held. Nothing is recorded when the write
    /// fails. The entry `entry` replaced, if any.
    fn write_content_and_put(
        &self,
        scope: &Scope,
        hash: &str,
        record: &ContentRecord,
        entry: CatalogEntry,
    ) -> Result<Option<CatalogEntry>>;
}

/// The embedded catalog: a SQLite database in the data directory (see [`Db`]), one
/// connection behind a mutex that only this type takes.
#[derive(Debug)]
pub struct SqliteCatalog {
    db: Mutex<Db>,
}

impl SqliteCatalog {
    /// Open the catalog in `data_dir` (made on first use; a catalog of the earlier layout,
    /// `catalog.json`, is moved into it then).
    pub fn open(data_dir: &Path) -> Result<Self> {
        Ok(SqliteCatalog {
            db: Mutex::new(Db::load(data_dir)?),
        })
    }

    fn db(&self) -> std::sync::MutexGuard<'_, Db> {
        crate::lock(&self.db)
    }
}

impl CatalogRecords for SqliteCatalog {
    fn save(&self) -> Result<()> {
        self.db().save()
    }

    fn truncate_log(&self) {
        self.db().truncate_log()
    }

    fn last_run(&self) -> Option<LastRun> {
        self.db().last_run()
    }

    fn set_last_run(&self, run: LastRun) {
        self.db().set_last_run(run)
    }

    fn record_once(&self, key: &str, value: &str) -> Result<String> {
        self.db().record_once(key, value)
    }
}

impl CatalogJobs for SqliteCatalog {}

impl CatalogEntries for SqliteCatalog {
    fn get(&self, scope: &Scope, locator: &str) -> Option<CatalogEntry> {
        self.db().get(scope, locator)
    }

    fn put(&self, scope: &Scope, entry: CatalogEntry) {
        self.db().put(scope, entry)
    }

    fn remove(&self, scope: &Scope, locator: &str) -> Option<CatalogEntry> {
        self.db().remove(scope, locator)
    }

    fn locators_with_hash(&self, scope: &Scope, hash: &str) -> Vec<String> {
        self.db().locators_with_hash(scope, hash)
    }

    fn repeated_under(&self, scope: &Scope, prefix: &str, max: usize) -> Vec<String> {
        self.db().repeated_under(scope, prefix, max)
    }

    fn holders(&self, scope: &Scope, hash: &str) -> Holders {
        self.db().holders(scope, hash)
    }

    fn scopes(&self) -> Vec<Scope> {
        self.db().scopes()
    }

    fn is_empty(&self) -> bool {
        self.db().is_empty()
    }

    fn top_level(&self) -> Vec<(Scope, String)> {
        self.db().top_level()
    }

    fn entries(&self, scope: &Scope) -> Vec<CatalogEntry> {
        self.db().entries(scope)
    }

    fn wanting_cards(&self, scope: &Scope) -> Vec<CatalogEntry> {
        self.db().wanting_cards(scope)
    }

    fn set_card_stored(&self, scope: &Scope, entry: &CatalogEntry) -> bool {
        self.db().set_card_stored(scope, entry)
    }

    fn set_card_missing(&self, scope: &Scope, locator: &str) {
        self.db().set_card_missing(scope, locator)
    }

    fn under(&self, scope: &Scope, prefix: &str) -> Vec<CatalogEntry> {
        self.db().under(scope, prefix)
    }

    fn member_names(
        &self,
        scope: &Scope,
        locator: &str,
        max: usize,
    ) -> (Vec<String>, usize, usize) {
        self.db().member_names(scope, locator, max)
    }

    fn len_of(&self, scope: &Scope) -> usize {
        self.db().len_of(scope)
    }

    fn holds(&self, scope: &Scope, locator: &str) -> bool {
        self.db().holds(scope, locator)
    }

    fn members_of(&self, scope: &Scope, parent: &str) -> Vec<CatalogEntry> {
        self.db().members_of(scope, parent)
    }

    fn stats(&self, scope: Option<&Scope>) -> CatalogStats {
        self.db().stats(scope)
    }
}

impl CatalogContents for SqliteCatalog {
    fn pack(&self, hash: &str) -> Result<Option<PackReader>> {
        let path = self.db().pack_path(hash);
        if !path.is_file() {
            return Ok(None);
        }
        PackReader::open(&path).map(Some)
    }

    fn content_index(&self, hash: &str) -> Result<Option<FileContentIndex>> {
        self.db().content_index(hash)
    }

    fn held_anywhere(&self, hash: &str) -> bool {
        self.db().held_anywhere(hash)
    }

    fn drop_content_index(&self, hash: &str) -> Result<bool> {
        self.db().drop_content_index(hash)
    }

    fn drop_unheld_content_indexes(&self) -> Result<u64> {
        self.db().drop_unheld_content_indexes()
    }

    fn write_content_and_put(
        &self,
        scope: &Scope,
        hash: &str,
        record: &ContentRecord,
        entry: CatalogEntry,
    ) -> Result<Option<CatalogEntry>> {
        let db = self.db();
        crate::failpoint::check("content.write")?;
        db.write_content(hash, record)?;
        let old = db.get(scope, &entry.locator);
        db.put(scope, entry);
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(locator: &str, hash: &str, parent: Option<&str>) -> CatalogEntry {
        CatalogEntry::indexed(locator, parent.map(str::to_string), hash, 1, 0, 2)
    }

    #[test]
    fn points_name_at_most_max_holders_and_every_tag() {
        let dir = tempfile::tempdir().unwrap();
        let c = SqliteCatalog::open(dir.path()).unwrap();
        let scope = Scope::user("u");
        for n in 0..(MAX_HOLDERS + 10) {
            let e = CatalogEntry::indexed(format!("/d/copy-{n:03}.txt"), None, "h", 1, 1, 1)
                .with_tags(vec![format!("n={n}")]);
            c.put(&scope, e);
        }
        let h = c.holders(&scope, "h");
        assert_eq!(h.locators.len(), MAX_HOLDERS);
        assert_eq!(h.locators[0], "/d/copy-000.txt");
        assert_eq!(h.tags.len(), MAX_HOLDERS + 10, "tags of every holder");
        assert_eq!(c.locators_with_hash(&scope, "h").len(), MAX_HOLDERS + 10);
    }

    #[test]
    fn the_holders_named_do_not_depend_on_arrival_order() {
        // Copies inside an archive, one nested deeper, and the file itself given directly
        // (last in locator order): the file given directly is named first, then members by
        // depth and locator, whichever order they were recorded in.
        let mut locators: Vec<String> = (0..MAX_HOLDERS + 20)
            .map(|n| format!("/a/bundle.zip!/copy-{n:03}.txt"))
            .collect();
        locators.push("/a/bundle.zip!/in.tar!/deep.txt".into());
        locators.push("/z/original.txt".into());
        let named = |order: &[String]| {
            let dir = tempfile::tempdir().unwrap();
            let c = SqliteCatalog::open(dir.path()).unwrap();
            let scope = Scope::user("u");
            for l in order {
                c.put(&scope, CatalogEntry::indexed(l.clone(), None, "h", 1, 1, 1));
            }
            c.holders(&scope, "h").locators
        };
        let first = named(&locators);
        assert_eq!(first[0], "/z/original.txt");
        assert_eq!(first[1], "/a/bundle.zip!/copy-000.txt");
        assert!(!first.contains(&"/a/bundle.zip!/in.tar!/deep.txt".to_string()));
        let mut reversed = locators.clone();
        reversed.reverse();
        assert_eq!(named(&reversed), first);
        // A shuffled order names the same files.
        let mut shuffled = locators.clone();
        for i in 0..shuffled.len() {
            shuffled.swap(i, (i * 7919) % locators.len());
        }
        assert_eq!(named(&shuffled), first);
    }

    #[test]
    fn a_catalog_of_the_earlier_layout_is_moved_into_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::user("u");
        let legacy = json!({
            "version": 1,
            "scopes": [{
                "scope": scope,
                "entries": {
                    "/a.txt": entry("/a.txt", "h1", None),
                    "/b.zip": CatalogEntry::container("/b.zip", "hz", 9, 1, "archive: 1 members", vec![]),
                    "/b.zip!/m.txt": entry("/b.zip!/m.txt", "h1", Some("/b.zip")).with_tags(vec!["k=v".into()]),
                }
            }],
            "last_run": null
        });
        std::fs::write(dir.path().join("catalog.json"), legacy.to_string()).unwrap();
        let c = SqliteCatalog::open(dir.path()).unwrap();
        assert_eq!(c.len_of(&scope), 3);
        assert_eq!(
            c.locators_with_hash(&scope, "h1"),
            ["/a.txt", "/b.zip!/m.txt"]
        );
        assert_eq!(c.get(&scope, "/b.zip!/m.txt").unwrap().tags, ["k=v"]);
        assert!(!dir.path().join("catalog.json").exists());
        assert!(dir.path().join("catalog.json.migrated").exists());
        drop(c);
        // Opened again: from the database, nothing moved twice.
        let c = SqliteCatalog::open(dir.path()).unwrap();
        assert_eq!(c.len_of(&scope), 3);
    }

    #[test]
    fn a_tag_set_is_stored_once_however_many_entries_carry_it() {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::user("u");
        let c = SqliteCatalog::open(dir.path()).unwrap();
        let tags: Vec<String> = (0..32)
            .map(|i| format!("k{i}={}", "v".repeat(256)))
            .collect();
        for n in 0..1000 {
            c.put(
                &scope,
                entry(&format!("/u.zip!/m{n}"), "h", Some("/u.zip")).with_tags(tags.clone()),
            );
        }
        c.save().unwrap();
        let sets = c.db().count("SELECT count(*) FROM tag_sets", []);
        assert_eq!(sets, 1);
        assert_eq!(c.get(&scope, "/u.zip!/m7").unwrap().tags, tags);
        // A point's tags are bounded in bytes as well as in number.
        let many: Vec<String> = (0..200)
            .map(|i| format!("t{i:03}={}", "w".repeat(200)))
            .collect();
        for (n, t) in many.chunks(10).enumerate() {
            c.put(
                &scope,
                entry(&format!("/v{n}"), "hv", None).with_tags(t.to_vec()),
            );
        }
        let h = c.holders(&scope, "hv");
        assert!(h.tags.iter().map(String::len).sum::<usize>() <= MAX_HOLDER_TAG_BYTES);
        assert!(h.tags.len() < 200 && !h.tags.is_empty());
    }

    #[test]
    fn round_trips_and_tracks_hashes_and_members() {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::user("u");
        let c = SqliteCatalog::open(dir.path()).unwrap();
        c.put(&scope, entry("a.zip!/x.txt", "h1", Some("a.zip")));
        c.put(&scope, entry("a.zip!/y.txt", "h1", Some("a.zip")));
        c.put(&scope, entry("a.zipper", "h2", None));
        assert_eq!(c.locators_with_hash(&scope, "h1").len(), 2);
        assert_eq!(c.members_of(&scope, "a.zip").len(), 2);
        c.save().unwrap();
        let c = SqliteCatalog::open(dir.path()).unwrap();
        assert_eq!(c.locators_with_hash(&scope, "h1").len(), 2);
        c.remove(&scope, "a.zip!/x.txt");
        assert_eq!(c.locators_with_hash(&scope, "h1"), vec!["a.zip!/y.txt"]);
        assert_eq!(c.stats(None).chunks, 4);
        assert!(c.get(&Scope::user("other"), "a.zipper").is_none());
    }

    #[test]
    fn content_indexes_go_when_no_scope_holds_their_content() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (Scope::user("a"), Scope::user("b"));
        let c = SqliteCatalog::open(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("content")).unwrap();
        for h in ["h1", "h2", "h3"] {
            std::fs::write(dir.path().join(format!("content/{h}.json")), b"{}").unwrap();
        }
        std::fs::write(dir.path().join("content/h9.json.tmp"), b"partial").unwrap();
        c.put(&a, entry("/a.txt", "h1", None));
        c.put(&b, entry("/b.txt", "h1", None));
        c.put(&a, entry("/c.txt", "h2", None));
        let present = |h: &str| dir.path().join(format!("content/{h}.json")).is_file();
        // Held by scope b still.
        c.remove(&a, "/a.txt");
        assert!(!c.drop_content_index("h1").unwrap());
        assert!(present("h1"));
        c.remove(&b, "/b.txt");
        assert!(c.drop_content_index("h1").unwrap());
        assert!(!present("h1"));
        assert!(!c.drop_content_index("h1").unwrap(), "already gone");
        // The sweep: h3 (no holder) and the leftover temporary file go, h2 stays.
        assert_eq!(c.drop_unheld_content_indexes().unwrap(), 2);
        assert!(present("h2") && !present("h3"));
        assert!(!dir.path().join("content/h9.json.tmp").exists());
    }
}
