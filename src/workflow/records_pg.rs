//! Workflows' records in the shared PostgreSQL catalog, so that a workflow started on one
//! node is recalled, gathered and ended on any other: `ingest_workflows` (a row per
//! workflow), `ingest_workflow_items` (a row per tool result's metadata, entity, summary) and
//! `ingest_workflow_texts` (a tool result's whole text, deflated). The same rows as the
//! embedded store ([`super::records::RecordStore`]); the tables are made by the catalog's
//! migrations (`PgCatalog::open` runs before this store is used).
//!
//! Calls on one workflow take turns on each node; two nodes writing one workflow at the
//! same instant each check its quota against what was committed before (so two calls at once
//! may pass it by one item each). Every statement that must see and change rows at once is
//! one transaction.

use extractors::Scope;
use postgres::GenericClient;

use super::records::{items_of, scope_json, Item, Kind, Usage, WorkflowStore};
use super::WorkflowStats;
use crate::error::Result;
use crate::index::{CatalogUrl, PgResult, PgSession};

/// The workflows' records of a shared catalog.
pub(crate) struct PgRecordStore {
    session: PgSession,
}

impl std::fmt::Debug for PgRecordStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgRecordStore")
            .field("url", self.session.url())
            .finish()
    }
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn uint(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Make workflow `key`'s row if it has none.
fn ensure_row(
    c: &mut impl GenericClient,
    key: &str,
    principal: &str,
    scope: &str,
    now: i64,
) -> PgResult<()> {
    c.execute(
        "INSERT INTO ingest_workflows (key, principal, scope, created_at, touched_at, next)
         VALUES ($1, $2, $3, $4, $4, 0) ON CONFLICT (key) DO NOTHING",
        &[&key, &principal, &scope, &now],
    )
    .map(|_| ())
}

impl PgRecordStore {
    /// The records in the catalog at `url` (connected on first use).
    pub(crate) fn new(url: &CatalogUrl) -> Self {
        PgRecordStore {
            session: PgSession::new(url),
        }
    }

    /// The one row `sql` finds (first column), if any.
    fn one<T>(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Option<T>>
    where
        T: for<'a> postgres::types::FromSql<'a> + Send,
    {
        self.session.try_call(|c| {
            c.query_opt(sql, params)?
                .map(|r| r.try_get::<_, T>(0))
                .transpose()
        })
    }
}

impl WorkflowStore for PgRecordStore {
    fn exists_on_disk(&self) -> bool {
        true
    }

    fn exists(&self, w: &Scope) -> Result<bool> {
        let key = w.key();
        let found: Option<i32> =
            self.one("SELECT 1 FROM ingest_workflows WHERE key = $1", &[&key])?;
        Ok(found.is_some())
    }

    fn count_of(&self, principal: &str) -> Result<usize> {
        let n: Option<i64> = self.one(
            "SELECT count(*) FROM ingest_workflows WHERE principal = $1",
            &[&principal],
        )?;
        Ok(usize::try_from(n.unwrap_or(0)).unwrap_or(0))
    }

    fn usage(&self, w: &Scope) -> Result<Usage> {
        let key = w.key();
        let (items, bytes) = self.session.try_call(|c| {
            let r = c.query_one(
                "SELECT count(*), coalesce(sum(bytes), 0)::BIGINT FROM ingest_workflow_items
                 WHERE workflow = $1",
                &[&key],
            )?;
            Ok((r.try_get::<_, i64>(0)?, r.try_get::<_, i64>(1)?))
        })?;
        Ok(Usage {
            items: usize::try_from(items).unwrap_or(0),
            bytes: uint(bytes),
        })
    }

    fn next_number(&self, w: &Scope, principal: &str, now: u64) -> Result<u64> {
        let (key, scope, now) = (w.key(), scope_json(w)?, int(now));
        let next = self.session.try_call(|c| {
            let mut tx = c.transaction()?;
            ensure_row(&mut tx, &key, principal, &scope, now)?;
            let next: i64 = tx
                .query_one(
                    "UPDATE ingest_workflows SET next = next + 1, touched_at = $2 WHERE key = $1
                     RETURNING next",
                    &[&key, &now],
                )?
                .try_get(0)?;
            tx.commit()?;
            Ok(next)
        })?;
        Ok(uint(next))
    }

    fn ensure(&self, w: &Scope, principal: &str, now: u64) -> Result<()> {
        let (key, scope, now) = (w.key(), scope_json(w)?, int(now));
        self.session
            .try_call(|c| ensure_row(c, &key, principal, &scope, now))
    }

    fn last_number(&self, w: &Scope) -> Result<u64> {
        let key = w.key();
        let next = self.session.try_call(|c| {
            c.query_opt("SELECT next FROM ingest_workflows WHERE key = $1", &[&key])?
                .map(|r| r.try_get::<_, i64>(0))
                .transpose()
        })?;
        Ok(next.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
    }

    fn raise_next(&self, w: &Scope, next: u64) -> Result<()> {
        let (key, next) = (w.key(), int(next));
        self.session.try_call(|c| {
            c.execute(
                "UPDATE ingest_workflows SET next = greatest(next, $2) WHERE key = $1",
                &[&key, &next],
            )
            .map(|_| ())
        })
    }

    fn put(&self, w: &Scope, item: &Item, now: u64) -> Result<()> {
        let key = w.key();
        let body = item.body()?;
        let raw = match item {
            Item::Result(m) => m.raw_bytes,
            _ => 0,
        };
        let (kind, name, indexed) = (item.kind() as i32, item.name(), item.indexed_name());
        let (bytes, raw, now) = (int(item.bytes()), int(raw), int(now));
        self.session.try_call(|c| {
            let mut tx = c.transaction()?;
            tx.execute(
                "INSERT INTO ingest_workflow_items
                     (workflow, kind, name, seq, indexed_name, bytes, raw_bytes, body)
                 VALUES ($1, $2, $3,
                         (SELECT coalesce(max(seq), 0) + 1 FROM ingest_workflow_items
                          WHERE workflow = $1),
                         $4, $5, $6, $7)
                 ON CONFLICT (workflow, kind, name) DO UPDATE SET
                     seq = EXCLUDED.seq, indexed_name = EXCLUDED.indexed_name,
                     bytes = EXCLUDED.bytes, raw_bytes = EXCLUDED.raw_bytes, body = EXCLUDED.body",
                &[&key, &kind, &name, &indexed, &bytes, &raw, &body],
            )?;
            tx.execute(
                "UPDATE ingest_workflows SET touched_at = $2 WHERE key = $1",
                &[&key, &now],
            )?;
            tx.commit()
        })
    }

    fn get(&self, w: &Scope, kind: Kind, name: &str) -> Result<Option<Item>> {
        let key = w.key();
        let body: Option<String> = self.one(
            "SELECT body FROM ingest_workflow_items WHERE workflow = $1 AND kind = $2 AND name = $3",
            &[&key, &(kind as i32), &name],
        )?;
        body.map(|b| Item::parse(kind, &b)).transpose()
    }

    fn indexed(&self, w: &Scope, indexed_name: &str) -> Result<Option<Item>> {
        let key = w.key();
        let row = self.session.try_call(|c| {
            c.query_opt(
                "SELECT kind, body FROM ingest_workflow_items
                 WHERE workflow = $1 AND indexed_name = $2 LIMIT 1",
                &[&key, &indexed_name],
            )?
            .map(|r| Ok((r.try_get::<_, i32>(0)?, r.try_get::<_, String>(1)?)))
            .transpose()
        })?;
        match row.and_then(|(kind, body)| Some((Kind::of(i64::from(kind))?, body))) {
            Some((kind, body)) => Item::parse(kind, &body).map(Some),
            None => Ok(None),
        }
    }

    fn list(&self, w: &Scope, kind: Kind, last: Option<usize>) -> Result<Vec<Item>> {
        let key = w.key();
        let order = match kind {
            Kind::Entity => "name COLLATE \"C\" ASC",
            _ => "seq DESC",
        };
        let limit = last.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let sql = format!(
            "SELECT body FROM ingest_workflow_items WHERE workflow = $1 AND kind = $2
             ORDER BY {order} LIMIT $3"
        );
        let bodies: Vec<String> = self.session.try_call(|c| {
            c.query(sql.as_str(), &[&key, &(kind as i32), &limit])?
                .iter()
                .map(|r| r.try_get(0))
                .collect()
        })?;
        items_of(kind, &bodies)
    }

    fn delete(&self, w: &Scope, kinds: &[Kind], whole: bool) -> Result<()> {
        let key = w.key();
        let kinds: Vec<i32> = kinds.iter().map(|k| *k as i32).collect();
        self.session.try_call(|c| {
            let mut tx = c.transaction()?;
            tx.execute(
                "DELETE FROM ingest_workflow_items WHERE workflow = $1 AND kind = ANY($2)",
                &[&key, &kinds],
            )?;
            if whole {
                tx.execute(
                    "DELETE FROM ingest_workflow_items WHERE workflow = $1",
                    &[&key],
                )?;
                tx.execute("DELETE FROM ingest_workflows WHERE key = $1", &[&key])?;
            }
            tx.commit()
        })
    }

    /// Nothing to do: PostgreSQL reclaims deleted rows itself (vacuum).
    fn truncate_log(&self) {}

    fn touch(&self, w: &Scope, now: u64) -> Result<()> {
        let (key, now) = (w.key(), int(now));
        self.session.try_call(|c| {
            c.execute(
                "UPDATE ingest_workflows SET touched_at = $2 WHERE key = $1",
                &[&key, &now],
            )
            .map(|_| ())
        })
    }

    fn unused_since(&self, cutoff: u64, max: usize) -> Result<Vec<Scope>> {
        let (cutoff, max) = (int(cutoff), i64::try_from(max).unwrap_or(i64::MAX));
        let scopes: Vec<String> = self.session.try_call(|c| {
            c.query(
                "SELECT scope FROM ingest_workflows WHERE touched_at < $1
                 ORDER BY touched_at LIMIT $2",
                &[&cutoff, &max],
            )?
            .iter()
            .map(|r| r.try_get(0))
            .collect()
        })?;
        scopes
            .iter()
            .map(|s| serde_json::from_str(s).map_err(|e| crate::Error::Workflow(e.to_string())))
            .collect()
    }

    fn touched_at(&self, w: &Scope) -> Result<Option<u64>> {
        let key = w.key();
        let t: Option<i64> = self.one(
            "SELECT touched_at FROM ingest_workflows WHERE key = $1",
            &[&key],
        )?;
        Ok(t.map(uint))
    }

    fn stats(&self) -> Result<WorkflowStats> {
        self.session.try_call(|c| {
            let workflows: i64 = c
                .query_one("SELECT count(*) FROM ingest_workflows", &[])?
                .try_get(0)?;
            let mut s = WorkflowStats {
                workflows: uint(workflows),
                ..WorkflowStats::default()
            };
            for r in c.query(
                "SELECT kind, count(*), coalesce(sum(raw_bytes), 0)::BIGINT
                 FROM ingest_workflow_items GROUP BY kind",
                &[],
            )? {
                let (kind, n, raw): (i32, i64, i64) = (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
                match Kind::of(i64::from(kind)) {
                    Some(Kind::Result) => {
                        s.results = uint(n);
                        s.result_bytes = uint(raw);
                    }
                    Some(Kind::Entity) => s.entities = uint(n),
                    Some(Kind::Summary) => s.summaries = uint(n),
                    None => {}
                }
            }
            Ok(s)
        })
    }

    fn put_text(&self, w: &Scope, handle: &str, text: &str) -> Result<()> {
        let (key, packed) = (w.key(), super::deflate(text)?);
        self.session.try_call(|c| {
            c.execute(
                "INSERT INTO ingest_workflow_texts (workflow, handle, text) VALUES ($1, $2, $3)
                 ON CONFLICT (workflow, handle) DO UPDATE SET text = EXCLUDED.text",
                &[&key, &handle, &packed],
            )
            .map(|_| ())
        })
    }

    fn text(&self, w: &Scope, handle: &str, bytes: u64) -> Result<Option<String>> {
        let key = w.key();
        let packed: Option<Vec<u8>> = self.one(
            "SELECT text FROM ingest_workflow_texts WHERE workflow = $1 AND handle = $2",
            &[&key, &handle],
        )?;
        packed
            .map(|p| super::inflate(p.as_slice(), bytes, &format!("tool result {handle}")))
            .transpose()
    }

    fn drop_texts(&self, w: &Scope) -> Result<()> {
        let key = w.key();
        self.session.try_call(|c| {
            c.execute(
                "DELETE FROM ingest_workflow_texts WHERE workflow = $1",
                &[&key],
            )
            .map(|_| ())
        })
    }
}
