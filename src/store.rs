//! The embedded vector store: one Qdrant Edge shard in the data directory.
//!
//! Points are chunks. A point's id is derived from its scope, its file's content hash and its
//! chunk index, so re-ingesting the same bytes rewrites the same points, and identical bytes
//! in one scope are stored once: the payload's `locators` lists every file that holds them.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use qdrant_edge::{
    CountRequest, CreateIndex, Distance, EdgeConfigBuilder, EdgeShard, EdgeVectorParamsBuilder,
    FieldIndexOperations, Filter, NamedQuery, Payload, PayloadFieldSchema, PayloadOps,
    PayloadSchemaType, PointId, PointInsertOperations, PointOperations, PointStruct, QueryEnum,
    QueryRequest, ScoringQuery, SetPayloadOp, UpdateOperation, WithPayloadInterface, WithVector,
};
use serde_json::{json, Value};

use crate::embed::{Chunk, DIMENSIONS};
use crate::error::{Error, Result};
use extractors::Scope;

/// The shard's folder inside the data directory.
pub const SHARD_DIR: &str = "shard";

/// The most hits one search returns, whatever its `limit`.
pub const MAX_SEARCH_HITS: usize = 1000;

/// Payload fields with a keyword index: everything search filters on.
const KEYWORD_FIELDS: &[&str] = &["scope_key", "content_hash", "user_id", "mandate_id"];

/// A chunk with its vector, ready to upsert.
#[derive(Debug, Clone)]
pub struct StoredChunk {
    pub chunk: Chunk,
    pub vector: Vec<f32>,
    pub content_hash: String,
    /// Every file locator holding these bytes in this scope; the first is shown in results.
    pub locators: Vec<String>,
}

/// The `locators` list of a point's payload (the files holding its content).
fn payload_locators(payload: &serde_json::Map<String, Value>) -> Vec<String> {
    payload
        .get("locators")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What the shard holds of one content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredContent {
    pub chunk_indexes: BTreeSet<u32>,
    pub locators: Vec<String>,
}

/// One stored point: whose, which chunk of which content, and the files holding it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PointRecord {
    pub scope_key: String,
    pub content_hash: String,
    pub chunk_index: Option<u32>,
    pub locators: Vec<String>,
}

/// One search result, straight from the payload.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Hit {
    /// The chunk's full locator: file locator and fragment.
    pub locator: String,
    pub score: f32,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Other files with identical content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_in: Vec<String>,
    pub content_hash: String,
}

/// The embedded Qdrant Edge shard.
pub struct VectorStore {
    shard: EdgeShard,
    path: PathBuf,
}

impl std::fmt::Debug for VectorStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorStore")
            .field("path", &self.path)
            .finish()
    }
}

/// A stable 64-bit point id for chunk `index` of content `hash` in scope `scope_key`.
pub fn point_id(scope_key: &str, hash: &str, index: u32) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(scope_key.as_bytes());
    h.update(&[0]);
    h.update(hash.as_bytes());
    h.update(&index.to_le_bytes());
    let bytes = h.finalize();
    let mut id = [0u8; 8];
    id.copy_from_slice(bytes.as_bytes().get(..8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(id)
}

fn filter(value: Value) -> Result<Filter> {
    serde_json::from_value(value).map_err(|e| Error::Pipeline(format!("bad filter: {e}")))
}

fn match_kw(key: &str, value: &str) -> Value {
    json!({ "key": key, "match": { "value": value } })
}

/// Points of content `hash` in exactly scope `scope_key`.
fn content_filter(scope_key: &str, hash: &str) -> Result<Filter> {
    filter(json!({ "must": [match_kw("scope_key", scope_key), match_kw("content_hash", hash)] }))
}

/// What `scope` may read: its own points (narrowed by feature instance and mandate when set),
/// plus points shared within its mandate.
pub fn scope_filter(scope: &Scope) -> Result<Filter> {
    let mut own = vec![match_kw("user_id", &scope.user_id)];
    if let Some(fi) = &scope.feature_instance_id {
        own.push(match_kw("feature_instance_id", fi));
    }
    if let Some(m) = &scope.mandate_id {
        own.push(match_kw("mandate_id", m));
    }
    let mut should = vec![json!({ "must": own })];
    if let Some(m) = &scope.mandate_id {
        should.push(json!({ "must": [
            match_kw("mandate_id", m),
            { "key": "is_shared", "match": { "value": true } }
        ]}));
    }
    filter(json!({ "should": should }))
}

impl VectorStore {
    /// Open the shard in `data_dir`, creating it on first use.
    pub fn open(data_dir: &Path) -> Result<Self> {
        let path = data_dir.join(SHARD_DIR);
        let err = |reason: String| Error::Store {
            path: path.clone(),
            reason,
        };
        // Owner-only like the data directory; the files Qdrant Edge creates in it follow the
        // process umask (see `crate::perms`).
        crate::perms::create_dir(&path)?;
        let existing = path.join("edge_config.json").is_file();
        let shard = if existing {
            EdgeShard::load(&path, None).map_err(|e| err(e.to_string()))?
        } else {
            let config = EdgeConfigBuilder::new()
                .vector(
                    "",
                    EdgeVectorParamsBuilder::new(DIMENSIONS, Distance::Cosine).build(),
                )
                .on_disk_payload(true)
                .build();
            EdgeShard::new(&path, config).map_err(|e| err(e.to_string()))?
        };
        let store = VectorStore {
            shard,
            path: path.clone(),
        };
        if !existing {
            for field in KEYWORD_FIELDS {
                store.update(UpdateOperation::FieldIndexOperation(
                    FieldIndexOperations::CreateIndex(CreateIndex {
                        field_name: field
                            .parse()
                            .map_err(|_| err(format!("bad field {field}")))?,
                        field_schema: Some(PayloadFieldSchema::FieldType(
                            PayloadSchemaType::Keyword,
                        )),
                    }),
                ))?;
            }
        }
        Ok(store)
    }

    fn update(&self, op: UpdateOperation) -> Result<()> {
        self.shard.update(op).map_err(|e| Error::Store {
            path: self.path.clone(),
            reason: e.to_string(),
        })
    }

    /// Insert or replace `chunks` for `scope`.
    pub fn upsert(&self, scope: &Scope, chunks: &[StoredChunk]) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        let scope_key = scope.key();
        let points = chunks
            .iter()
            .map(|c| {
                let ctx = &c.chunk.context_ref;
                let fragment = ctx
                    .location
                    .split_once('#')
                    .map(|(_, f)| f.to_string())
                    .unwrap_or_default();
                let payload = json!({
                    "text": c.chunk.text,
                    "fragment": fragment,
                    "locators": c.locators,
                    "content_hash": c.content_hash,
                    "chunk_index": c.chunk.index,
                    "object_id": c.chunk.object_id,
                    "content_type": c.chunk.content_type.as_str(),
                    "label": ctx.label,
                    "page_index": ctx.page_index,
                    "section_id": ctx.section_id,
                    "sheet_name": ctx.sheet_name,
                    "slide_index": ctx.slide_index,
                    "scope_key": scope_key,
                    "user_id": scope.user_id,
                    "feature_instance_id": scope.feature_instance_id,
                    "mandate_id": scope.mandate_id,
                    "is_shared": scope.is_shared,
                });
                PointStruct::new(
                    point_id(&scope_key, &c.content_hash, c.chunk.index),
                    c.vector.clone(),
                    payload,
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

    /// Point every chunk of content `hash` in `scope` at the files in `locators`.
    pub fn set_locators(&self, scope: &Scope, hash: &str, locators: &[String]) -> Result<()> {
        let mut payload = serde_json::Map::new();
        payload.insert("locators".into(), json!(locators));
        self.update(UpdateOperation::PayloadOperation(PayloadOps::SetPayload(
            SetPayloadOp {
                payload: Payload(payload),
                points: None,
                filter: Some(content_filter(&scope.key(), hash)?),
                key: None,
            },
        )))?;
        crate::failpoint::hit("store.set_locators");
        Ok(())
    }

    /// Delete every chunk of content `hash` in `scope`.
    pub fn delete_content(&self, scope: &Scope, hash: &str) -> Result<()> {
        self.delete_content_by_key(&scope.key(), hash)
    }

    /// Delete every chunk of content `hash` in the scope whose key is `scope_key`.
    pub fn delete_content_by_key(&self, scope_key: &str, hash: &str) -> Result<()> {
        self.update(UpdateOperation::PointOperation(
            PointOperations::DeletePointsByFilter(content_filter(scope_key, hash)?),
        ))?;
        crate::failpoint::hit("store.delete");
        Ok(())
    }

    /// What the shard holds, content by content: (scope key, content hash) → the chunk
    /// indexes present and the locators of the first point read. Scrolls every point, reading
    /// only those payload fields; used to reconcile the store with the catalog after a crash.
    pub fn inventory(&self) -> Result<HashMap<(String, String), StoredContent>> {
        let mut out: HashMap<(String, String), StoredContent> = HashMap::new();
        self.each_point(&mut |p| {
            let entry = out
                .entry((p.scope_key, p.content_hash))
                .or_insert_with(|| StoredContent {
                    chunk_indexes: BTreeSet::new(),
                    locators: p.locators,
                });
            if let Some(i) = p.chunk_index {
                entry.chunk_indexes.insert(i);
            }
        })?;
        Ok(out)
    }

    /// Every point's identity and locators, in no particular order (for consistency checks
    /// and tests: [`VectorStore::inventory`] keeps only one locator list per content).
    pub fn point_records(&self) -> Result<Vec<PointRecord>> {
        let mut out = Vec::new();
        self.each_point(&mut |p| out.push(p))?;
        Ok(out)
    }

    /// Visit every point, reading only the fields of a [`PointRecord`].
    fn each_point(&self, visit: &mut dyn FnMut(PointRecord)) -> Result<()> {
        let fields = ["scope_key", "content_hash", "chunk_index", "locators"]
            .iter()
            .map(|f| f.parse())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| Error::Store {
                path: self.path.clone(),
                reason: "bad payload field name".into(),
            })?;
        self.scroll(None, WithPayloadInterface::Fields(fields), &mut |r| {
            let payload = r.payload.map(|p| p.0).unwrap_or_default();
            let text = |k: &str| {
                payload
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            visit(PointRecord {
                scope_key: text("scope_key"),
                content_hash: text("content_hash"),
                chunk_index: payload
                    .get("chunk_index")
                    .and_then(Value::as_u64)
                    .and_then(|i| u32::try_from(i).ok()),
                locators: payload_locators(&payload),
            });
        })
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
                .map_err(|e| Error::Store {
                    path: self.path.clone(),
                    reason: e.to_string(),
                })?;
            records.into_iter().for_each(&mut *visit);
            match next {
                Some(n) => offset = Some(n),
                None => return Ok(()),
            }
        }
    }

    /// Number of points visible to `scope`, or all points with `None`.
    pub fn count(&self, scope: Option<&Scope>) -> Result<usize> {
        let filter = scope.map(scope_filter).transpose()?;
        self.shard
            .count(CountRequest {
                filter,
                exact: true,
            })
            .map_err(|e| Error::Store {
                path: self.path.clone(),
                reason: e.to_string(),
            })
    }

    /// The `limit` nearest chunks to `vector` that `scope` may read, best first; at most
    /// [`MAX_SEARCH_HITS`], whatever is asked (the engine reserves room for `limit` hits).
    pub fn search(
        &self,
        scope: &Scope,
        vector: Vec<f32>,
        limit: usize,
        min_score: Option<f32>,
    ) -> Result<Vec<Hit>> {
        let request = QueryRequest {
            prefetches: Vec::new(),
            query: Some(ScoringQuery::Vector(QueryEnum::Nearest(
                NamedQuery::default_dense(vector),
            ))),
            filter: Some(scope_filter(scope)?),
            score_threshold: min_score.map(Into::into),
            limit: limit.min(MAX_SEARCH_HITS),
            offset: 0,
            params: None,
            with_vector: WithVector::Bool(false),
            with_payload: WithPayloadInterface::Bool(true),
        };
        let points = self.shard.query(request).map_err(|e| Error::Store {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        Ok(points
            .into_iter()
            .map(|p| {
                let payload = p.payload.map(|p| p.0).unwrap_or_default();
                let s = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_string);
                let locators: Vec<String> = payload_locators(&payload);
                let file = locators.first().cloned().unwrap_or_default();
                let locator = match s("fragment").filter(|f| !f.is_empty()) {
                    Some(f) => format!("{file}#{f}"),
                    None => file,
                };
                Hit {
                    locator,
                    score: p.score,
                    text: s("text").unwrap_or_default(),
                    section: s("section_id"),
                    label: s("label"),
                    also_in: locators.into_iter().skip(1).collect(),
                    content_hash: s("content_hash").unwrap_or_default(),
                }
            })
            .collect())
    }

    /// Persist everything to disk (WAL and segments).
    pub fn flush(&self) {
        self.shard.flush();
        crate::failpoint::hit("store.flush");
    }

    /// Compact segments and build the vector index; worth it after a large ingest.
    pub fn optimize(&self) -> Result<bool> {
        self.shard.optimize().map_err(|e| Error::Store {
            path: self.path.clone(),
            reason: e.to_string(),
        })
    }

    /// Every point id for `scope` (used by tests and consistency checks).
    pub fn point_ids(&self, scope: &Scope) -> Result<Vec<PointId>> {
        let mut ids = Vec::new();
        self.scroll(
            Some(scope_filter(scope)?),
            WithPayloadInterface::Bool(false),
            &mut |r| ids.push(r.id),
        )?;
        Ok(ids)
    }
}

/// Chunks with simple vectors for tests that need a real store but no model.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A unit vector along `axis`.
    pub fn unit(axis: usize) -> Vec<f32> {
        let mut v = vec![0.0; DIMENSIONS];
        if let Some(x) = v.get_mut(axis % DIMENSIONS) {
            *x = 1.0;
        }
        v
    }

    /// `n` chunks of content `hash` held by `locator`; chunk `i` lies along axis `axis + i`
    /// and covers line `i + 1`.
    pub fn chunks(hash: &str, n: u32, locator: &str, axis: usize) -> Vec<StoredChunk> {
        (0..n)
            .map(|i| {
                let location = format!("{locator}#line={}", i + 1);
                StoredChunk {
                    chunk: Chunk {
                        index: i,
                        text: format!("{hash} chunk {i}"),
                        object_id: format!("{hash}-{i}"),
                        content_type: extractors::ContentType::Text,
                        context_ref: extractors::ContextRef {
                            container_path: locator.to_string(),
                            location,
                            label: Some(format!("line {}", i + 1)),
                            page_index: None,
                            section_id: None,
                            sheet_name: None,
                            slide_index: None,
                        },
                        tokens: 3,
                    },
                    vector: unit(axis + i as usize),
                    content_hash: hash.to_string(),
                    locators: vec![locator.to_string()],
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{chunks, unit};
    use super::*;

    fn open() -> (tempfile::TempDir, VectorStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = VectorStore::open(dir.path()).unwrap();
        (dir, store)
    }

    /// (scope key, hash) → (chunk indexes, locators), sorted for comparison.
    fn inventory(store: &VectorStore) -> Vec<(String, String, Vec<u32>, Vec<String>)> {
        let mut out: Vec<_> = store
            .inventory()
            .unwrap()
            .into_iter()
            .map(|((k, h), c)| (k, h, c.chunk_indexes.into_iter().collect(), c.locators))
            .collect();
        out.sort();
        out
    }

    fn ids(store: &VectorStore, scope: &Scope) -> Vec<u64> {
        let mut ids: Vec<u64> = store
            .point_ids(scope)
            .unwrap()
            .into_iter()
            .map(|id| match id {
                PointId::NumId(n) => n,
                other => panic!("unexpected id {other:?}"),
            })
            .collect();
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
            let store = VectorStore::open(dir.path()).unwrap();
            store.upsert(&alice, &chunks("h", 2, "a.txt", 0)).unwrap();
            store.flush();
        }
        let store = VectorStore::open(dir.path()).unwrap();
        assert_eq!(store.count(Some(&alice)).unwrap(), 2);
        assert_eq!(
            store.search(&alice, unit(0), 1, None).unwrap()[0].locator,
            "a.txt#line=1"
        );
    }
}
