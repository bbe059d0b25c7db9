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

use crate::chunk::Chunk;
use crate::embed::DIMENSIONS;
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
