//! [`EdgeIndex`]: the vector index as one embedded Qdrant Edge shard in the data directory.

use std::path::{Path, PathBuf};

use qdrant_edge::{
    CountRequest, CreateIndex, Distance, EdgeConfigBuilder, EdgeShard, EdgeVectorParamsBuilder,
    FieldIndexOperations, Filter, NamedQuery, Payload, PayloadFieldSchema, PayloadOps,
    PayloadSchemaType, PointInsertOperations, PointOperations, PointStruct, QueryEnum,
    QueryRequest, ScoringQuery, SetPayloadOp, UpdateOperation, WithPayloadInterface, WithVector,
};
use serde_json::Value;

use super::{
    payload, point_id, Hit, IndexRead, IndexWrite, PointRecord, StoredChunk, MAX_SEARCH_HITS,
};
use crate::embed::DIMENSIONS;
use crate::error::{Error, Result};
use extractors::Scope;

/// The shard's folder inside the data directory.
pub const SHARD_DIR: &str = "shard";

/// The embedded Qdrant Edge shard.
pub struct EdgeIndex {
    shard: EdgeShard,
    path: PathBuf,
}

impl std::fmt::Debug for EdgeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeIndex")
            .field("path", &self.path)
            .finish()
    }
}

/// The error of a failed operation on the shard at `path`.
fn store_error(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::Store {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// A filter built by [`payload`], in the shard's type.
fn filter(value: Value) -> Result<Filter> {
    serde_json::from_value(value).map_err(|e| Error::Pipeline(format!("bad filter: {e}")))
}

impl EdgeIndex {
    /// Open the shard in `data_dir`, creating it on first use.
    pub fn open(data_dir: &Path) -> Result<Self> {
        let path = data_dir.join(SHARD_DIR);
        let err = |e| store_error(&path, e);
        // Owner-only like the data directory; the files Qdrant Edge creates in it follow the
        // process umask (see `crate::perms`).
        crate::perms::create_dir(&path)?;
        let existing = path.join("edge_config.json").is_file();
        let shard = if existing {
            EdgeShard::load(&path, None).map_err(err)?
        } else {
            let config = EdgeConfigBuilder::new()
                .vector(
                    "",
                    EdgeVectorParamsBuilder::new(DIMENSIONS, Distance::Cosine).build(),
                )
                .on_disk_payload(true)
                .build();
            EdgeShard::new(&path, config).map_err(err)?
        };
        let index = EdgeIndex {
            shard,
            path: path.clone(),
        };
        if !existing {
            for field in payload::KEYWORD_FIELDS {
                index.update(UpdateOperation::FieldIndexOperation(
                    FieldIndexOperations::CreateIndex(CreateIndex {
                        field_name: field
                            .parse()
                            .map_err(|_| store_error(&path, format!("bad field {field}")))?,
                        field_schema: Some(PayloadFieldSchema::FieldType(
                            PayloadSchemaType::Keyword,
                        )),
                    }),
                ))?;
            }
        }
        Ok(index)
    }

    /// The error of a failed operation on this shard.
    fn err(&self, e: impl std::fmt::Display) -> Error {
        store_error(&self.path, e)
    }

    fn update(&self, op: UpdateOperation) -> Result<()> {
        self.shard.update(op).map_err(|e| self.err(e))
    }

    /// Visit every point matching `filter`, a page at a time.
    fn scroll(
        &self,
        filter: Option<Filter>,
        with_payload: WithPayloadInterface,
        visit: &mut dyn FnMut(qdrant_edge::Record),
    ) -> Result<()> {
        let mut offset = None;
        loop {
            let (records, next) = self
                .shard
                .scroll(qdrant_edge::ScrollRequest {
                    offset,
                    limit: Some(1000),
                    filter: filter.clone(),
                    with_payload: Some(with_payload.clone()),
                    with_vector: WithVector::Bool(false),
                    order_by: None,
                })
                .map_err(|e| self.err(e))?;
            records.into_iter().for_each(&mut *visit);
            match next {
                Some(n) => offset = Some(n),
                None => return Ok(()),
            }
        }
    }
}

impl IndexRead for EdgeIndex {
    fn search(
        &self,
        scope: &Scope,
        vector: Vec<f32>,
        limit: usize,
        min_score: Option<f32>,
    ) -> Result<Vec<Hit>> {
        // The engine reserves room for `limit` hits: hence the cap.
        let request = QueryRequest {
            prefetches: Vec::new(),
            query: Some(ScoringQuery::Vector(QueryEnum::Nearest(
                NamedQuery::default_dense(vector),
            ))),
            filter: Some(filter(payload::scope_filter(scope))?),
            score_threshold: min_score.map(Into::into),
            limit: limit.min(MAX_SEARCH_HITS),
            offset: 0,
            params: None,
            with_vector: WithVector::Bool(false),
            with_payload: WithPayloadInterface::Bool(true),
        };
        let points = self.shard.query(request).map_err(|e| self.err(e))?;
        Ok(points
            .into_iter()
            .map(|p| payload::hit(&p.payload.map(|p| p.0).unwrap_or_default(), p.score))
            .collect())
    }

    fn count(&self, scope: Option<&Scope>) -> Result<usize> {
        let filter = scope
            .map(|s| filter(payload::scope_filter(s)))
            .transpose()?;
        self.shard
            .count(CountRequest {
                filter,
                exact: true,
            })
            .map_err(|e| self.err(e))
    }

    fn for_each_point(&self, visit: &mut dyn FnMut(PointRecord)) -> Result<()> {
        let fields = payload::RECORD_FIELDS
            .iter()
            .map(|f| f.parse())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| self.err("bad payload field name"))?;
        self.scroll(None, WithPayloadInterface::Fields(fields), &mut |r| {
            visit(payload::record(&r.payload.map(|p| p.0).unwrap_or_default()));
        })
    }
}

impl IndexWrite for EdgeIndex {
    fn upsert(&self, scope: &Scope, chunks: &[StoredChunk]) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        let scope_key = scope.key();
        let points = chunks
            .iter()
            .map(|c| {
                PointStruct::new(
                    point_id(&scope_key, &c.content_hash, c.chunk.index),
                    c.vector.clone(),
                    payload::of_chunk(scope, &scope_key, c),
                )
                .into()
            })
            .collect();
        self.update(UpdateOperation::PointOperation(
            PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
        ))?;
        crate::failpoint::hit("store.upsert");
        Ok(())
    }

    fn set_locators(&self, scope: &Scope, hash: &str, locators: &[String]) -> Result<()> {
        self.update(UpdateOperation::PayloadOperation(PayloadOps::SetPayload(
            SetPayloadOp {
                payload: Payload(payload::locators_update(locators)),
                points: None,
                filter: Some(filter(payload::content_filter(&scope.key(), hash))?),
                key: None,
            },
        )))?;
        crate::failpoint::hit("store.set_locators");
        Ok(())
    }

    fn delete_content_by_key(&self, scope_key: &str, hash: &str) -> Result<()> {
        self.update(UpdateOperation::PointOperation(
            PointOperations::DeletePointsByFilter(filter(payload::content_filter(
                scope_key, hash,
            ))?),
        ))?;
        crate::failpoint::hit("store.delete");
        Ok(())
    }

    /// Persist everything to disk (WAL and segments).
    fn flush(&self) {
        self.shard.flush();
        crate::failpoint::hit("store.flush");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::{chunks, inventory, unit};
    use qdrant_edge::PointId;

    fn open() -> (tempfile::TempDir, EdgeIndex) {
        let dir = tempfile::tempdir().unwrap();
        let store = EdgeIndex::open(dir.path()).unwrap();
        (dir, store)
    }

    /// The ids of the points `scope` may read, as the shard holds them, sorted.
    fn ids(store: &EdgeIndex, scope: &Scope) -> Vec<u64> {
        let mut ids = Vec::new();
        store
            .scroll(
                Some(filter(payload::scope_filter(scope)).unwrap()),
                WithPayloadInterface::Bool(false),
                &mut |r| match r.id {
                    PointId::NumId(n) => ids.push(n),
                    other => panic!("unexpected id {other:?}"),
                },
            )
            .unwrap();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn point_ids_derive_from_scope_hash_and_index_and_upserting_again_adds_nothing() {
        let alice = Scope::user("alice");
        let key = alice.key();
        assert_eq!(point_id(&key, "h", 0), point_id(&key, "h", 0));
        assert_ne!(point_id(&key, "h", 0), point_id(&key, "h", 1));
        assert_ne!(point_id(&key, "h", 0), point_id(&key, "g", 0));
        assert_ne!(
            point_id(&key, "h", 0),
            point_id(&Scope::user("bob").key(), "h", 0)
        );

        let (_dir, store) = open();
        store.upsert(&alice, &chunks("h", 3, "a.txt", 0)).unwrap();
        let mut expected: Vec<u64> = (0..3).map(|i| point_id(&key, "h", i)).collect();
        expected.sort_unstable();
        assert_eq!(ids(&store, &alice), expected);
        // The same content again (under another name): the same points, rewritten.
        store.upsert(&alice, &chunks("h", 3, "b.txt", 0)).unwrap();
        assert_eq!(ids(&store, &alice), expected);
        assert_eq!(store.count(None).unwrap(), 3);
        assert_eq!(
            inventory(&store),
            [(key, "h".into(), vec![0, 1, 2], vec!["b.txt".into()])]
        );
    }

    #[test]
    fn a_scope_never_sees_another_users_points() {
        let (_dir, store) = open();
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        // The same bytes in both scopes are two sets of points.
        store
            .upsert(&alice, &chunks("same", 2, "alice/a.txt", 0))
            .unwrap();
        store
            .upsert(&bob, &chunks("same", 2, "bob/a.txt", 0))
            .unwrap();
        store
            .upsert(&bob, &chunks("bobs", 1, "bob/b.txt", 5))
            .unwrap();
        assert_eq!(store.count(Some(&alice)).unwrap(), 2);
        assert_eq!(store.count(Some(&bob)).unwrap(), 3);
        assert_eq!(store.count(None).unwrap(), 5);
        assert!(ids(&store, &alice)
            .iter()
            .all(|id| !ids(&store, &bob).contains(id)));

        let hits = store.search(&alice, unit(0), 10, None).unwrap();
        assert_eq!(hits.len(), 2, "{hits:#?}");
        assert_eq!(hits[0].locator, "alice/a.txt#line=1");
        assert!((hits[0].score - 1.0).abs() < 1e-4, "{}", hits[0].score);
        assert!(hits.iter().all(|h| h.locator.starts_with("alice/")));
        // Bob's own content, searched for exactly, is not Alice's to find.
        let hits = store.search(&alice, unit(5), 10, Some(0.5)).unwrap();
        assert!(hits.is_empty(), "{hits:#?}");
        let hits = store.search(&bob, unit(5), 1, Some(0.5)).unwrap();
        assert_eq!(hits[0].locator, "bob/b.txt#line=1");
        assert!(store
            .search(&Scope::user("carol"), unit(0), 10, None)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn shared_content_is_visible_within_its_mandate_only() {
        let (_dir, store) = open();
        let in_mandate = |user: &str| Scope {
            mandate_id: Some("m".into()),
            ..Scope::user(user)
        };
        let shared = Scope {
            is_shared: true,
            ..in_mandate("alice")
        };
        store.upsert(&shared, &chunks("s", 1, "s.txt", 0)).unwrap();
        store
            .upsert(&in_mandate("alice"), &chunks("p", 1, "p.txt", 1))
            .unwrap();
        assert_eq!(store.count(Some(&in_mandate("bob"))).unwrap(), 1);
        let hits = store.search(&in_mandate("bob"), unit(0), 10, None).unwrap();
        assert_eq!(
            hits.iter().map(|h| h.locator.as_str()).collect::<Vec<_>>(),
            ["s.txt#line=1"]
        );
        let elsewhere = Scope {
            mandate_id: Some("other".into()),
            ..Scope::user("bob")
        };
        assert_eq!(store.count(Some(&elsewhere)).unwrap(), 0);
        assert_eq!(store.count(Some(&Scope::user("bob"))).unwrap(), 0);
    }

    #[test]
    fn deleting_a_content_removes_all_its_chunks_and_nothing_else() {
        let (_dir, store) = open();
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        store.upsert(&alice, &chunks("h1", 3, "a1.txt", 0)).unwrap();
        store
            .upsert(&alice, &chunks("h2", 2, "a2.txt", 10))
            .unwrap();
        store.upsert(&bob, &chunks("h1", 3, "b1.txt", 0)).unwrap();
        store.delete_content(&alice, "h1").unwrap();
        assert_eq!(
            inventory(&store),
            [
                (alice.key(), "h2".into(), vec![0, 1], vec!["a2.txt".into()]),
                (bob.key(), "h1".into(), vec![0, 1, 2], vec!["b1.txt".into()]),
            ]
        );
        assert_eq!(store.count(None).unwrap(), 5);
        // By key, as repair does for scopes the catalog no longer knows.
        store.delete_content_by_key(&bob.key(), "h1").unwrap();
        store.delete_content(&alice, "absent").unwrap();
        assert_eq!(
            inventory(&store),
            [(alice.key(), "h2".into(), vec![0, 1], vec!["a2.txt".into()])]
        );
    }

    #[test]
    fn set_locators_repoints_every_chunk_of_one_content_in_one_scope() {
        let (_dir, store) = open();
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        store.upsert(&alice, &chunks("h", 2, "old.txt", 0)).unwrap();
        store.upsert(&bob, &chunks("h", 2, "bob.txt", 0)).unwrap();
        let holders = vec!["new.txt".to_string(), "copy.txt".to_string()];
        store.set_locators(&alice, "h", &holders).unwrap();
        assert_eq!(
            inventory(&store),
            [
                (alice.key(), "h".into(), vec![0, 1], holders.clone()),
                (bob.key(), "h".into(), vec![0, 1], vec!["bob.txt".into()]),
            ]
        );
        let hits = store.search(&alice, unit(1), 1, None).unwrap();
        assert_eq!(hits[0].locator, "new.txt#line=2");
        assert_eq!(hits[0].also_in, ["copy.txt"]);
        assert_eq!(hits[0].content_hash, "h");
        assert_eq!(hits[0].text, "h chunk 1");
    }

    #[test]
    fn points_survive_reopening_the_shard() {
        let dir = tempfile::tempdir().unwrap();
        let alice = Scope::user("alice");
        {
            let store = EdgeIndex::open(dir.path()).unwrap();
            store.upsert(&alice, &chunks("h", 2, "a.txt", 0)).unwrap();
            store.flush();
        }
        let store = EdgeIndex::open(dir.path()).unwrap();
        assert_eq!(store.count(Some(&alice)).unwrap(), 2);
        assert_eq!(
            store.search(&alice, unit(0), 1, None).unwrap()[0].locator,
            "a.txt#line=1"
        );
    }
}
