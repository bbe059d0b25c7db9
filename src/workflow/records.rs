//! Where a data directory keeps its workflows' records: one SQLite database,
//! `workflows.sqlite`, with a row per workflow and a row per item (a tool result's metadata,
//! an entity, a summary). Storing or replacing an item writes that item's row: nothing that
//! grows with a workflow, or with all of them, is rewritten by a call, so one workflow's bulk
//! never makes another's calls wait on it. A workflow's size (items and bytes, what its
//! quotas bound) is a sum over its rows, kept exact by the database, not a counter beside it.
//!
//! The tool results' raw text stays in files (`workflows/<principal>/<workflow>/results/`),
//! written before their row; records of the earlier layout (`record.json` per workflow) are
//! moved into the database when it is first opened.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use extractors::Scope;
use rusqlite::{params, Connection, OptionalExtension};

use super::{Entity, ResultMeta, Summary, WorkflowStats};
use crate::error::{Error, Result};
use crate::lock;

/// The database file, in the data directory.
/// The schema this code reads and writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS workflows (
    key TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    scope TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    touched_at INTEGER NOT NULL,
    next INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS workflows_by_principal ON workflows(principal);
CREATE INDEX IF NOT EXISTS workflows_by_touch ON workflows(touched_at);
CREATE TABLE IF NOT EXISTS items (
    workflow TEXT NOT NULL,
    kind INTEGER NOT NULL,
    name TEXT NOT NULL,
    seq INTEGER NOT NULL,
    indexed_name TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    raw_bytes INTEGER NOT NULL DEFAULT 0,
    body TEXT NOT NULL,
    PRIMARY KEY (workflow, kind, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_by_indexed_name ON items(workflow, indexed_name);
";

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Result = 0,
    Entity = 1,
    Summary = 2,
}

impl Kind {
    pub(super) fn of(n: i64) -> Option<Kind> {
        match n {
            0 => Some(Kind::Result),
            1 => Some(Kind::Entity),
            2 => Some(Kind::Summary),
            _ => None,
        }
    }
}

/// One item as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Result(ResultMeta),
    Entity(Entity),
    Summary(Summary),
}

impl Item {
    pub(super) fn kind(&self) -> Kind {
        match self {
            Item::Result(_) => Kind::Result,
            Item::Entity(_) => Kind::Entity,
            Item::Summary(_) => Kind::Summary,
        }
    }

    /// What names it in its workflow: a handle, an entity's key, a summary's id.
    pub(super) fn name(&self) -> &str {
        match self {
            Item::Result(m) => &m.handle,
            Item::Entity(e) => &e.key,
            Item::Summary(s) => &s.id,
        }
    }

    pub(super) fn indexed_name(&self) -> String {
        match self {
            Item::Result(m) => m.indexed_name(),
            Item::Entity(e) => e.indexed_name(),
            Item::Summary(s) => s.indexed_name(),
        }
    }

    /// The bytes it counts against its workflow's `max_workflow_bytes`: a tool result's text
    /// and arguments, an entity's key, value and source, a summary's text and what it covers.
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Item::Result(m) => m.raw_bytes + m.args.to_string().len() as u64,
            Item::Entity(e) => {
                (e.key.len() + e.value.len() + e.source.as_ref().map_or(0, String::len)) as u64
            }
            Item::Summary(s) => (s.text.len() + s.covers.as_ref().map_or(0, String::len)) as u64,
        }
    }

    pub(super) fn body(&self) -> Result<String> {
        match self {
            Item::Result(m) => serde_json::to_string(m),
            Item::Entity(e) => serde_json::to_string(e),
            Item::Summary(s) => serde_json::to_string(s),
        }
        .map_err(|e| Error::Workflow(e.to_string()))
    }

    pub(super) fn parse(kind: Kind, body: &str) -> Result<Item> {
        let bad = |e: serde_json::Error| Error::Workflow(format!("a stored item: {e}"));
        Ok(match kind {
            Kind::Result => Item::Result(serde_json::from_str(body).map_err(bad)?),
            Kind::Entity => Item::Entity(serde_json::from_str(body).map_err(bad)?),
            Kind::Summary => Item::Summary(serde_json::from_str(body).map_err(bad)?),
        })
    }
}

/// What a workflow holds: its items and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub items: usize,
    pub bytes: u64,
}

/// The workflows' database, opened on first use, and the folder of their tool results'
/// text (`workflows/<principal>/<workflow>/results/`, named by hashes: no id is a path).
#[derive(Debug)]
pub(crate) struct RecordStore {
    path: PathBuf,
    root: PathBuf,
    conn: Mutex<Option<Connection>>,
}

fn db_error(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::Workflow(format!("{}: {e}", path.display()))
}

impl RecordStore {
    /// The database of the data directory `data_dir` (nothing is opened yet).
    pub(crate) fn new(data_dir: &Path) -> RecordStore {
        let data = crate::DataDir::at(data_dir);
        RecordStore {
            path: data.workflows_db(),
            root: data.legacy_workflows(),
            conn: Mutex::new(None),
        }
    }

    /// The folder of `w`'s principal (its user, feature instance and mandate): every
    /// workflow's tool results lie below.
    fn principal_folder(&self, w: &Scope) -> PathBuf {
        self.root.join(super::short_hash(&super::principal_key(w)))
    }

    /// The folder of workflow scope `w` (its tool results' text).
    fn folder(&self, w: &Scope) -> PathBuf {
        self.principal_folder(w).join(super::short_hash(&w.key()))
    }

    /// Run `f` on the open connection (opened, and made, on first use).
    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T> {
        let mut slot = lock(&self.conn);
        if slot.is_none() {
            *slot = Some(self.open()?);
        }
        match slot.as_mut() {
            Some(conn) => f(conn).map_err(db_error(&self.path)),
            None => Err(Error::Workflow("the workflow database is not open".into())),
        }
    }

    fn open(&self) -> Result<Connection> {
        let err = db_error(&self.path);
        let fresh = !self.path.exists();
        if fresh {
            // Owner-only from the start: the file is made by this process's open below.
            crate::perms::create_file(&self.path)?;
        }
        let conn = Connection::open(&self.path).map_err(&err)?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(&err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(&err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(&err)?;
        // Deleted rows are overwritten, not left in free pages (an ended workflow's items).
        conn.pragma_update(None, "secure_delete", "ON")
            .map_err(&err)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(&err)?;
        match version {
            0 => {
                conn.execute_batch(SCHEMA).map_err(&err)?;
                conn.pragma_update(None, "user_version", SCHEMA_VERSION)
                    .map_err(&err)?;
            }
            SCHEMA_VERSION => {}
            other => {
                return Err(Error::Workflow(format!(
                    "{}: schema version {other}, this ingest reads {SCHEMA_VERSION}: a newer \
                     ingest wrote it",
                    self.path.display()
                )))
            }
        }
        Ok(conn)
    }
}

/// Where workflows' records live: the embedded database of a data directory
/// ([`RecordStore`]) or, for many nodes, the shared PostgreSQL catalog
/// ([`super::records_pg::PgRecordStore`]). One small interface: rows per workflow and per
/// item, and a tool result's text.
pub(crate) trait WorkflowStore: Send + Sync + std::fmt::Debug {
    /// Whether records exist already (the earlier layout is moved in only while none do).
    fn exists_on_disk(&self) -> bool;
    /// Whether workflow `w` has a record.
    fn exists(&self, w: &Scope) -> Result<bool>;
    /// How many workflows `principal` (a scope key without a workflow) has.
    fn count_of(&self, principal: &str) -> Result<usize>;
    /// What workflow `w` holds.
    fn usage(&self, w: &Scope) -> Result<Usage>;
    /// The next item number of workflow `w` (its record made now if it has none), counted
    /// up for good: handles and summary ids are never reused.
    fn next_number(&self, w: &Scope, principal: &str, now: u64) -> Result<u64>;
    /// Make workflow `w`'s record if it has none.
    fn ensure(&self, w: &Scope, principal: &str, now: u64) -> Result<()>;
    /// Count workflow `w`'s item numbers on from `next` at least (records moved in keep
    /// their handles, and no later one repeats them).
    fn raise_next(&self, w: &Scope, next: u64) -> Result<()>;
    /// The last item number workflow `w` gave out (0 when none or no record).
    fn last_number(&self, w: &Scope) -> Result<u64>;
    /// Store `item` in workflow `w` (replacing the item of the same kind and name), and mark
    /// the workflow used now.
    fn put(&self, w: &Scope, item: &Item, now: u64) -> Result<()>;
    /// The item of `kind` named `name` in workflow `w`.
    fn get(&self, w: &Scope, kind: Kind, name: &str) -> Result<Option<Item>>;
    /// The item of workflow `w` indexed under `indexed_name` (what a search hit names).
    fn indexed(&self, w: &Scope, indexed_name: &str) -> Result<Option<Item>>;
    /// The items of `kind` in workflow `w`: tool results and summaries oldest first,
    /// entities by key; the newest `last` only, when given.
    fn list(&self, w: &Scope, kind: Kind, last: Option<usize>) -> Result<Vec<Item>>;
    /// Delete workflow `w`'s items of `kinds`; with `whole`, its record too.
    fn delete(&self, w: &Scope, kinds: &[Kind], whole: bool) -> Result<()>;
    /// Leave no earlier page of deleted rows behind (best effort).
    fn truncate_log(&self);
    /// Mark workflow `w` used at `now`.
    fn touch(&self, w: &Scope, now: u64) -> Result<()>;
    /// The workflows last used before `cutoff`, oldest first, at most `max`.
    fn unused_since(&self, cutoff: u64, max: usize) -> Result<Vec<Scope>>;
    /// When workflow `w` was last used.
    fn touched_at(&self, w: &Scope) -> Result<Option<u64>>;
    /// Counts over every workflow.
    fn stats(&self) -> Result<WorkflowStats>;
    /// Keep tool result `handle`'s whole `text` for workflow `w`.
    fn put_text(&self, w: &Scope, handle: &str, text: &str) -> Result<()>;
    /// Tool result `handle`'s text, which must be `bytes` long; `None` when it is gone.
    fn text(&self, w: &Scope, handle: &str, bytes: u64) -> Result<Option<String>>;
    /// Forget every tool result text of workflow `w`.
    fn drop_texts(&self, w: &Scope) -> Result<()>;
    /// Move records of an earlier layout under `root` in; how many.
    fn import_legacy(&self, _root: &Path) -> Result<usize> {
        Ok(0)
    }
}

/// The items of `kind` read from `bodies` as [`WorkflowStore::list`] reads them: entities
/// by key, the others newest first (turned here to oldest first).
pub(super) fn items_of(kind: Kind, bodies: &[String]) -> Result<Vec<Item>> {
    let mut items = bodies
        .iter()
        .map(|b| Item::parse(kind, b))
        .collect::<Result<Vec<_>>>()?;
    if kind != Kind::Entity {
        items.reverse();
    }
    Ok(items)
}

/// The highest item number among `items`' handles and summary ids (`tr_7`, `s_3`).
pub(super) fn highest_number<'a>(names: impl Iterator<Item = &'a str>) -> u64 {
    names
        .filter_map(|n| n.rsplit('_').next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

/// Copy every workflow of `from` into `to` (rows, tool results' texts, when each was last
/// used, item numbers), oldest items first so that they list in the same order; the
/// workflows and items copied.
pub(crate) fn copy_all(from: &dyn WorkflowStore, to: &dyn WorkflowStore) -> Result<(usize, usize)> {
    let (mut workflows, mut items) = (0, 0);
    for w in from.unused_since(u64::MAX, usize::MAX)? {
        let principal = super::principal_key(&w);
        let touched = from.touched_at(&w)?.unwrap_or(0);
        to.ensure(&w, &principal, touched)?;
        let mut numbers = Vec::new();
        for kind in [Kind::Result, Kind::Entity, Kind::Summary] {
            for item in from.list(&w, kind, None)? {
                if let Item::Result(m) = &item {
                    if let Some(text) = from.text(&w, &m.handle, m.raw_bytes)? {
                        to.put_text(&w, &m.handle, &text)?;
                    }
                }
                if kind != Kind::Entity {
                    numbers.push(item.name().to_string());
                }
                to.put(&w, &item, touched)?;
                items += 1;
            }
        }
        let highest = highest_number(numbers.iter().map(String::as_str));
        to.raise_next(&w, highest.max(from.last_number(&w)?))?;
        workflows += 1;
    }
    Ok((workflows, items))
}

/// [`WorkflowStore::list`], each item as `pick` gives it (those it gives `None` for left
/// out).
pub(crate) fn list_as<T>(
    store: &dyn WorkflowStore,
    w: &Scope,
    kind: Kind,
    last: Option<usize>,
    pick: impl Fn(Item) -> Option<T>,
) -> Result<Vec<T>> {
    Ok(store
        .list(w, kind, last)?
        .into_iter()
        .filter_map(pick)
        .collect())
}

impl WorkflowStore for RecordStore {
    fn last_number(&self, w: &Scope) -> Result<u64> {
        let key = w.key();
        self.with(|c| {
            c.query_row("SELECT next FROM workflows WHERE key = ?1", [&key], |r| {
                r.get::<_, i64>(0)
            })
            .optional()
        })
        .map(|n| n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
    }

    fn raise_next(&self, w: &Scope, next: u64) -> Result<()> {
        let key = w.key();
        let next = i64::try_from(next).unwrap_or(i64::MAX);
        self.with(|c| {
            c.execute(
                "UPDATE workflows SET next = max(next, ?2) WHERE key = ?1",
                params![key, next],
            )
            .map(|_| ())
        })
    }

    fn import_legacy(&self, root: &Path) -> Result<usize> {
        self.import_legacy_records(root)
    }

    fn put_text(&self, w: &Scope, handle: &str, text: &str) -> Result<()> {
        let results = self.folder(w).join("results");
        crate::perms::create_dir(&results)?;
        super::write_blob(&results.join(format!("{handle}.deflate")), text)
    }

    fn text(&self, w: &Scope, handle: &str, bytes: u64) -> Result<Option<String>> {
        let path = self
            .folder(w)
            .join("results")
            .join(format!("{handle}.deflate"));
        if !path.exists() {
            return Ok(None);
        }
        super::read_blob(&path, bytes).map(Some)
    }

    fn drop_texts(&self, w: &Scope) -> Result<()> {
        let folder = self.folder(w);
        if folder.exists() {
            std::fs::remove_dir_all(&folder).map_err(|e| Error::io(&folder, e))?;
            // The principal's folder goes with its last workflow (one being created
            // meanwhile keeps it: it is not empty then).
            let _ = std::fs::remove_dir(self.principal_folder(w));
        }
        Ok(())
    }

    /// Whether the database file exists.
    fn exists_on_disk(&self) -> bool {
        self.path.exists()
    }

    /// Whether workflow `w` has a record.
    fn exists(&self, w: &Scope) -> Result<bool> {
        let key = w.key();
        self.with(|c| {
            c.query_row("SELECT 1 FROM workflows WHERE key = ?1", [&key], |_| Ok(()))
                .optional()
                .map(|r| r.is_some())
        })
    }

    /// How many workflows `principal` (a scope key without a workflow) has.
    fn count_of(&self, principal: &str) -> Result<usize> {
        self.with(|c| {
            c.query_row(
                "SELECT count(*) FROM workflows WHERE principal = ?1",
                [principal],
                |r| r.get::<_, i64>(0),
            )
        })
        .map(|n| usize::try_from(n).unwrap_or(0))
    }

    /// What workflow `w` holds.
    fn usage(&self, w: &Scope) -> Result<Usage> {
        let key = w.key();
        self.with(|c| {
            c.query_row(
                "SELECT count(*), coalesce(sum(bytes), 0) FROM items WHERE workflow = ?1",
                [&key],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
            )
        })
        .map(|(items, bytes)| Usage {
            items: usize::try_from(items).unwrap_or(0),
            bytes: u64::try_from(bytes).unwrap_or(0),
        })
    }

    /// The next item number of workflow `w` (its record made now if it has none), counted up
    /// for good: handles and summary ids are never reused.
    fn next_number(&self, w: &Scope, principal: &str, now: u64) -> Result<u64> {
        let (key, scope) = (w.key(), scope_json(w)?);
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        self.with(|c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT OR IGNORE INTO workflows (key, principal, scope, created_at, touched_at, next)
                 VALUES (?1, ?2, ?3, ?4, ?4, 0)",
                params![key, principal, scope, now],
            )?;
            let next: i64 = tx.query_row(
                "UPDATE workflows SET next = next + 1, touched_at = ?2 WHERE key = ?1 RETURNING next",
                params![key, now],
                |r| r.get(0),
            )?;
            tx.commit()?;
            Ok(u64::try_from(next).unwrap_or(0))
        })
    }

    /// Make workflow `w`'s record if it has none (an entity, which takes no number).
    fn ensure(&self, w: &Scope, principal: &str, now: u64) -> Result<()> {
        let (key, scope) = (w.key(), scope_json(w)?);
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        self.with(|c| {
            c.execute(
                "INSERT OR IGNORE INTO workflows (key, principal, scope, created_at, touched_at, next)
                 VALUES (?1, ?2, ?3, ?4, ?4, 0)",
                params![key, principal, scope, now],
            )
            .map(|_| ())
        })
    }

    /// Store `item` in workflow `w` (replacing the item of the same kind and name), and mark
    /// the workflow used now.
    fn put(&self, w: &Scope, item: &Item, now: u64) -> Result<()> {
        let key = w.key();
        let body = item.body()?;
        let raw = match item {
            Item::Result(m) => m.raw_bytes,
            _ => 0,
        };
        let (bytes, raw) = (
            i64::try_from(item.bytes()).unwrap_or(i64::MAX),
            i64::try_from(raw).unwrap_or(i64::MAX),
        );
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        self.with(|c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT OR REPLACE INTO items (workflow, kind, name, seq, indexed_name, bytes, raw_bytes, body)
                 VALUES (?1, ?2, ?3,
                         (SELECT coalesce(max(seq), 0) + 1 FROM items WHERE workflow = ?1),
                         ?4, ?5, ?6, ?7)",
                params![
                    key,
                    item.kind() as i64,
                    item.name(),
                    item.indexed_name(),
                    bytes,
                    raw,
                    body
                ],
            )?;
            tx.execute(
                "UPDATE workflows SET touched_at = ?2 WHERE key = ?1",
                params![key, now],
            )?;
            tx.commit()
        })
    }

    /// The item of `kind` named `name` in workflow `w`.
    fn get(&self, w: &Scope, kind: Kind, name: &str) -> Result<Option<Item>> {
        let key = w.key();
        let body: Option<String> = self.with(|c| {
            c.query_row(
                "SELECT body FROM items WHERE workflow = ?1 AND kind = ?2 AND name = ?3",
                params![key, kind as i64, name],
                |r| r.get(0),
            )
            .optional()
        })?;
        body.map(|b| Item::parse(kind, &b)).transpose()
    }

    /// The item of workflow `w` indexed under `indexed_name` (what a search hit names).
    fn indexed(&self, w: &Scope, indexed_name: &str) -> Result<Option<Item>> {
        let key = w.key();
        let row: Option<(i64, String)> = self.with(|c| {
            c.query_row(
                "SELECT kind, body FROM items WHERE workflow = ?1 AND indexed_name = ?2",
                params![key, indexed_name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })?;
        match row {
            Some((kind, body)) => match Kind::of(kind) {
                Some(kind) => Item::parse(kind, &body).map(Some),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    /// The items of `kind` in workflow `w`: tool results and summaries oldest first, entities
    /// by key; the newest `last` only, when given.
    fn list(&self, w: &Scope, kind: Kind, last: Option<usize>) -> Result<Vec<Item>> {
        let key = w.key();
        let order = match kind {
            Kind::Entity => "name ASC",
            _ => "seq DESC",
        };
        let limit = last.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let sql = format!(
            "SELECT body FROM items WHERE workflow = ?1 AND kind = ?2 ORDER BY {order} LIMIT ?3"
        );
        let bodies: Vec<String> = self.with(|c| {
            let mut stmt = c.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![key, kind as i64, limit], |r| r.get(0))?;
            rows.collect()
        })?;
        items_of(kind, &bodies)
    }

    /// Delete workflow `w`'s items of `kinds`; with `whole`, its record too.
    fn delete(&self, w: &Scope, kinds: &[Kind], whole: bool) -> Result<()> {
        let key = w.key();
        self.with(|c| {
            let tx = c.transaction()?;
            for kind in kinds {
                tx.execute(
                    "DELETE FROM items WHERE workflow = ?1 AND kind = ?2",
                    params![key, *kind as i64],
                )?;
            }
            if whole {
                tx.execute("DELETE FROM items WHERE workflow = ?1", [&key])?;
                tx.execute("DELETE FROM workflows WHERE key = ?1", [&key])?;
            }
            tx.commit()
        })
    }

    /// Copy what the write-ahead log holds into the database and empty the log, so that
    /// deleted items leave no earlier page behind (best effort).
    fn truncate_log(&self) {
        let r = self.with(|c| c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())));
        if let Err(e) = r {
            tracing::warn!("emptying the workflows' log: {e}");
        }
    }

    /// Mark workflow `w` used now (its time to live starts again).
    fn touch(&self, w: &Scope, now: u64) -> Result<()> {
        let key = w.key();
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        self.with(|c| {
            c.execute(
                "UPDATE workflows SET touched_at = ?2 WHERE key = ?1",
                params![key, now],
            )
            .map(|_| ())
        })
    }

    /// The workflows last used before `cutoff` (seconds since the epoch), oldest first, at
    /// most `max`.
    fn unused_since(&self, cutoff: u64, max: usize) -> Result<Vec<Scope>> {
        let cutoff = i64::try_from(cutoff).unwrap_or(i64::MAX);
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let scopes: Vec<String> = self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT scope FROM workflows WHERE touched_at < ?1 ORDER BY touched_at LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![cutoff, max], |r| r.get(0))?;
            rows.collect()
        })?;
        scopes
            .iter()
            .map(|s| serde_json::from_str(s).map_err(|e| Error::Workflow(e.to_string())))
            .collect()
    }

    /// When workflow `w` was last used.
    fn touched_at(&self, w: &Scope) -> Result<Option<u64>> {
        let key = w.key();
        let t: Option<i64> = self.with(|c| {
            c.query_row(
                "SELECT touched_at FROM workflows WHERE key = ?1",
                [&key],
                |r| r.get(0),
            )
            .optional()
        })?;
        Ok(t.map(|t| u64::try_from(t).unwrap_or(0)))
    }

    /// Counts over every workflow.
    fn stats(&self) -> Result<WorkflowStats> {
        if !self.path.exists() {
            return Ok(WorkflowStats::default());
        }
        self.with(|c| {
            let workflows: i64 = c.query_row("SELECT count(*) FROM workflows", [], |r| r.get(0))?;
            let mut s = WorkflowStats {
                workflows: u64::try_from(workflows).unwrap_or(0),
                ..WorkflowStats::default()
            };
            let mut stmt = c.prepare_cached(
                "SELECT kind, count(*), coalesce(sum(raw_bytes), 0) FROM items GROUP BY kind",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            for row in rows {
                let (kind, n, raw) = row?;
                let n = u64::try_from(n).unwrap_or(0);
                match Kind::of(kind) {
                    Some(Kind::Result) => {
                        s.results = n;
                        s.result_bytes = u64::try_from(raw).unwrap_or(0);
                    }
                    Some(Kind::Entity) => s.entities = n,
                    Some(Kind::Summary) => s.summaries = n,
                    None => {}
                }
            }
            Ok(s)
        })
    }
}

pub(super) fn scope_json(w: &Scope) -> Result<String> {
    serde_json::to_string(w).map_err(|e| Error::Workflow(e.to_string()))
}

impl RecordStore {
    /// Move the records of the earlier layout (`workflows/<principal>/<workflow>/record.json`
    /// under `root`) into the database, each in one transaction, and delete each file once
    /// its rows are in; how many. A record that cannot be read is left in place and logged.
    fn import_legacy_records(&self, root: &Path) -> Result<usize> {
        let mut moved = 0;
        for principal in super::subfolders(root)? {
            for folder in super::subfolders(&principal)? {
                let path = folder.join("record.json");
                let record = match std::fs::read(&path) {
                    Ok(bytes) => serde_json::from_slice::<super::LegacyRecord>(&bytes),
                    Err(_) => continue,
                };
                let record = match record {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!("{}: not moved into the database: {e}", path.display());
                        continue;
                    }
                };
                self.import_one(&record)?;
                std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                moved += 1;
            }
        }
        Ok(moved)
    }

    fn import_one(&self, r: &super::LegacyRecord) -> Result<()> {
        let w = &r.scope;
        let principal = Scope {
            workflow_id: None,
            is_shared: false,
            ..w.clone()
        }
        .key();
        let now = crate::report::now_secs();
        let items: Vec<Item> = r
            .results
            .iter()
            .cloned()
            .map(Item::Result)
            .chain(r.entities.values().cloned().map(Item::Entity))
            .chain(r.summaries.iter().cloned().map(Item::Summary))
            .collect();
        let next = highest_number(
            r.results
                .iter()
                .map(|m| m.handle.as_str())
                .chain(r.summaries.iter().map(|s| s.id.as_str())),
        );
        let bodies = items
            .iter()
            .map(|i| Ok((i, i.body()?)))
            .collect::<Result<Vec<_>>>()?;
        let (key, scope) = (w.key(), scope_json(w)?);
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        let next = i64::try_from(next).unwrap_or(i64::MAX);
        self.with(|c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT OR IGNORE INTO workflows (key, principal, scope, created_at, touched_at, next)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![key, principal, scope, now, next],
            )?;
            for (seq, (item, body)) in bodies.iter().enumerate() {
                let raw = match item {
                    Item::Result(m) => m.raw_bytes,
                    _ => 0,
                };
                tx.execute(
                    "INSERT OR REPLACE INTO items (workflow, kind, name, seq, indexed_name, bytes, raw_bytes, body)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        key,
                        item.kind() as i64,
                        item.name(),
                        i64::try_from(seq + 1).unwrap_or(i64::MAX),
                        item.indexed_name(),
                        i64::try_from(item.bytes()).unwrap_or(i64::MAX),
                        i64::try_from(raw).unwrap_or(i64::MAX),
                        body
                    ],
                )?;
            }
            tx.commit()
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Item numbers a workflow gave out stay given out when its records are copied, even
    /// those whose items were deleted since: no handle is ever given twice.
    #[test]
    fn copied_workflows_keep_counting_after_their_last_number() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (from, to) = (RecordStore::new(a.path()), RecordStore::new(b.path()));
        let w = Scope {
            workflow_id: Some("w1".into()),
            ..Scope::user("alice")
        };
        let principal = super::super::principal_key(&w);
        for n in 1..=3 {
            assert_eq!(from.next_number(&w, &principal, 10).unwrap(), n);
        }
        assert_eq!(from.last_number(&w).unwrap(), 3);
        assert_eq!(copy_all(&from, &to).unwrap(), (1, 0));
        assert_eq!(to.last_number(&w).unwrap(), 3);
        assert_eq!(to.next_number(&w, &principal, 11).unwrap(), 4);
        assert_eq!(to.last_number(&Scope::user("nobody")).unwrap(), 0);
    }
}
