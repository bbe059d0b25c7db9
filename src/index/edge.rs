//! [`EdgeIndex`]: the vector index as one embedded Qdrant Edge shard in the data directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use qdrant_edge::{
    CountRequest, CreateIndex, CreateVectorName, Distance, EdgeConfigBuilder, EdgeShard,
    EdgeSparseVectorParamsBuilder, EdgeVectorParamsBuilder, FieldIndexOperations, Filter, Fusion,
    Modifier, NamedQuery, Payload, PayloadFieldSchema, PayloadOps, PayloadSchemaType,
    PointInsertOperations, PointOperations, PointStruct, PointVectorsPersisted, Prefetch,
    QueryEnum, QueryRequest, ScoringQuery, SetPayloadOp, UpdateOperation, UpdateVectorsOp, Vector,
    VectorNameConfig, VectorNameOperations, VectorOperations, Vectors, WithPayloadInterface,
    WithVector,
};
use serde_json::Value;

use super::keywords::{keyword_text, Keywords, SPARSE_VECTOR};
use super::{
    payload, point_id, Hit, IndexQuery, IndexRead, IndexWrite, PointRecord, SearchFilter,
    StoredChunk, MAX_SEARCH_HITS,
};
use crate::embed::DIMENSIONS;
use crate::error::{Error, Result};
use extractors::Scope;

/// The shard's folder inside the data directory.
pub const SHARD_DIR: &str = "shard";

/// One point as stored: its id, dense vector and whole payload. [`EdgeIndex::export_points`]
/// gives them and [`EdgeIndex::import_points`] takes them (the keyword vector is computed
/// again from the payload), so an index moves or grows without embedding anything.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExportedPoint {
    /// The point id (see `point_id`).
    pub id: u64,
    /// The dense embedding.
    pub vector: Vec<f32>,
    /// The payload (text, locators, scope, filters' fields).
    pub payload: serde_json::Map<String, Value>,
}

/// The embedded Qdrant Edge shard.
pub struct EdgeIndex {
    shard: EdgeShard,
    path: PathBuf,
    keywords: Keywords,
}

/// The reciprocal-rank-fusion constant: a hit's fused score is the sum over the rankings of
/// `1 / (RRF_K + rank)`, ranks counted from 0. 2 is Qdrant's own default (`DEFAULT_RRF_K`),
/// so the top of each ranking weighs most. On eval/dev.tsv, k = 1, 2 and 3 gave recall@5
/// 0.956/0.956/0.941, page recall@5 0.902 each and MRR 0.90; the RRF paper's 60 gave 0.912,
/// 0.829 and 0.876 (it lets a chunk ranked fairly by both beat one ranked first by one).
const RRF_K: usize = 2;

/// Candidates each ranking contributes to a fused search, at least.
const FUSION_CANDIDATES: usize = 100;

/// Hits asked for past the last one wanted, to order ties at the cut deterministically.
const TIE_ROOM: usize = 16;

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
                .sparse_vector(
                    SPARSE_VECTOR,
                    EdgeSparseVectorParamsBuilder::new()
                        .modifier(Modifier::Idf)
                        .build(),
                )
                .on_disk_payload(true)
                .build();
            EdgeShard::new(&path, config).map_err(err)?
        };
        let index = EdgeIndex {
            shard,
            path,
            keywords: Keywords::new()?,
        };
        // A shard without the keyword vector was written by an earlier version: the vector is
        // added and every point gets it from its payload. The vector is created first and
        // points without it are found by scrolling, so a crash in between repeats the work.
        if existing
            && !index
                .shard
                .config()
                .sparse_vectors
                .contains_key(SPARSE_VECTOR)
        {
            index.update(UpdateOperation::VectorNameOperation(
                VectorNameOperations::CreateVectorName(CreateVectorName {
                    vector_name: SPARSE_VECTOR.into(),
                    // The config's inner type is not re-exported: built from its JSON form.
                    config: serde_json::from_value::<VectorNameConfig>(
                        serde_json::json!({ "sparse": { "modifier": "idf" } }),
                    )
                    .map_err(|e| index.err(e))?,
                }),
            ))?;
        }
        if existing {
            index.backfill_keyword_vectors()?;
        }
        // A shard without a `containers` index was written by an earlier version: its points
        // lack the derived fields the search filters read. Backfilled before the index is
        // made, so that a crash in between repeats the backfill.
        if existing && !index.has_payload_index("containers")? {
            index.backfill_derived_fields()?;
        }
        index.create_payload_indexes()?;
        Ok(index)
    }

    /// Whether the shard has a payload index on `field`.
    fn has_payload_index(&self, field: &str) -> Result<bool> {
        let field: qdrant_edge::JsonPath = field
            .parse()
            .map_err(|_| self.err(format!("bad field {field}")))?;
        Ok(self.shard.info().payload_schema.contains_key(&field))
    }

    /// Give every point that lacks them the fields derived from its `locators` and
    /// `section_id` (`containers`, `section_path`), one update per distinct source.
    fn backfill_derived_fields(&self) -> Result<()> {
        let fields = payload::DERIVED_FROM
            .iter()
            .map(|f| f.parse())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| self.err("bad payload field name"))?;
        let mut groups: HashMap<(Vec<String>, Option<String>), Vec<qdrant_edge::PointId>> =
            HashMap::new();
        self.scroll(
            Some(filter(payload::lacking_derived())?),
            WithPayloadInterface::Fields(fields),
            false,
            &mut |r| {
                let source = payload::derived_source(&r.payload.map(|p| p.0).unwrap_or_default());
                groups.entry(source).or_default().push(r.id);
            },
        )?;
        if groups.is_empty() {
            return Ok(());
        }
        tracing::info!(
            sources = groups.len(),
            "adding search fields to points of an earlier version"
        );
        for ((locators, section), ids) in groups {
            self.update(UpdateOperation::PayloadOperation(PayloadOps::SetPayload(
                SetPayloadOp {
                    payload: Payload(payload::derived_update(&locators, section.as_deref())),
                    points: Some(ids),
                    filter: None,
                    key: None,
                },
            )))?;
        }
        self.shard.flush();
        Ok(())
    }

    /// Give every point that lacks it the keyword vector of its payload (points written by
    /// a version without keyword search), a thousand points per update.
    fn backfill_keyword_vectors(&self) -> Result<()> {
        let lacking = filter(serde_json::json!({
            "must_not": [{ "has_vector": SPARSE_VECTOR }]
        }))?;
        let fields = ["text", "section_id", "locators"]
            .iter()
            .map(|f| f.parse())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| self.err("bad payload field name"))?;
        let mut pending = Vec::new();
        let mut done = 0usize;
        let mut result = Ok(());
        self.scroll(
            Some(lacking),
            WithPayloadInterface::Fields(fields),
            false,
            &mut |r| {
                // After a failed update the scroll runs out without collecting more.
                if result.is_err() {
                    return;
                }
                let p = r.payload.map(|p| p.0).unwrap_or_default();
                let text = payload::keyword_source(&p);
                pending.push(PointVectorsPersisted {
                    id: r.id,
                    vector: self.keyword_vectors(&text).into(),
                });
                if pending.len() >= 1000 {
                    done += pending.len();
                    result = self.update_vectors(std::mem::take(&mut pending));
                }
            },
        )?;
        result?;
        if !pending.is_empty() {
            done += pending.len();
            self.update_vectors(pending)?;
        }
        if done > 0 {
            tracing::info!(
                points = done,
                "added keyword vectors to points of an earlier version"
            );
            self.shard.flush();
        }
        Ok(())
    }

    /// The named-vector set holding only the keyword vector of `text`.
    fn keyword_vectors(&self, text: &str) -> qdrant_edge::VectorStructInternal {
        Vectors::new_named([(SPARSE_VECTOR, Vector::from(self.keywords.document(text)))]).0
    }

    fn update_vectors(&self, points: Vec<PointVectorsPersisted>) -> Result<()> {
        self.update(UpdateOperation::VectorOperation(
            VectorOperations::UpdateVectors(UpdateVectorsOp {
                points,
                update_filter: None,
            }),
        ))
    }

    /// Create the payload indexes the shard lacks: all of them in a new shard, the ones added
    /// since in a shard made by an earlier version.
    fn create_payload_indexes(&self) -> Result<()> {
        let present = self.shard.info().payload_schema;
        let wanted = payload::KEYWORD_FIELDS
            .iter()
            .map(|f| (f, PayloadSchemaType::Keyword))
            .chain(
                payload::INTEGER_FIELDS
                    .iter()
                    .map(|f| (f, PayloadSchemaType::Integer)),
            );
        for (field, kind) in wanted {
            let field_name: qdrant_edge::JsonPath = field
                .parse()
                .map_err(|_| self.err(format!("bad field {field}")))?;
            if present.contains_key(&field_name) {
                continue;
            }
            self.update(UpdateOperation::FieldIndexOperation(
                FieldIndexOperations::CreateIndex(CreateIndex {
                    field_name,
                    field_schema: Some(PayloadFieldSchema::FieldType(kind)),
                }),
            ))?;
        }
        Ok(())
    }

    /// The error of a failed operation on this shard.
    fn err(&self, e: impl std::fmt::Display) -> Error {
        store_error(&self.path, e)
    }

    /// Every point with its dense vector and payload, 1 000 at a time.
    pub fn export_points(&self, visit: &mut dyn FnMut(ExportedPoint)) -> Result<()> {
        let mut failed = None;
        self.scroll(None, WithPayloadInterface::Bool(true), true, &mut |r| {
            if failed.is_some() {
                return;
            }
            let qdrant_edge::PointId::NumId(id) = r.id else {
                failed = Some(format!("point {} has no numeric id", r.id));
                return;
            };
            let vector = match r.vector {
                Some(qdrant_edge::VectorStructInternal::Named(mut named)) => match named.remove("")
                {
                    Some(qdrant_edge::VectorInternal::Dense(v)) => v,
                    _ => Vec::new(),
                },
                Some(qdrant_edge::VectorStructInternal::Single(v)) => v,
                _ => Vec::new(),
            };
            if vector.is_empty() {
                failed = Some(format!("point {id} has no dense vector"));
                return;
            }
            visit(ExportedPoint {
                id,
                vector,
                payload: r.payload.map(|p| p.0).unwrap_or_default(),
            });
        })?;
        failed.map_or(Ok(()), |reason| Err(self.err(reason)))
    }

    /// Insert `points` as they are (replacing points with the same ids); their keyword
    /// vectors are computed from their payloads, as a backfill does.
    pub fn import_points(&self, points: &[ExportedPoint]) -> Result<()> {
        if points.is_empty() {
            return Ok(());
        }
        let points = points
            .iter()
            .map(|p| {
                let keyword = payload::keyword_source(&p.payload);
                PointStruct::new(
                    p.id,
                    Vectors::new_named([
                        ("", Vector::from(p.vector.clone())),
                        (
                            SPARSE_VECTOR,
                            Vector::from(self.keywords.document(&keyword)),
                        ),
                    ]),
                    Value::Object(p.payload.clone()),
                )
                .into()
            })
            .collect();
        self.update(UpdateOperation::PointOperation(
            PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
        ))
    }

    fn update(&self, op: UpdateOperation) -> Result<()> {
        self.shard.update(op).map_err(|e| self.err(e))
    }

    /// Visit every point matching `filter`, a page at a time.
    fn scroll(
        &self,
        filter: Option<Filter>,
        with_payload: WithPayloadInterface,
        with_vector: bool,
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
                    with_vector: WithVector::Bool(with_vector),
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
        query: &IndexQuery,
        limit: usize,
        offset: usize,
        min_score: Option<f32>,
        search_filter: &SearchFilter,
    ) -> Result<Vec<Hit>> {
        // The engine reserves room for `limit` hits: hence the cap. The shard's own `offset`
        // only widens the search (a Qdrant server drops the offset above the shard), so the
        // best `offset + limit` are asked for and the first `offset` skipped here.
        let end = offset.saturating_add(limit).min(MAX_SEARCH_HITS);
        if offset >= end {
            return Ok(Vec::new());
        }
        let filter = filter(payload::search_filter(scope, search_filter))?;
        let dense = query
            .vector
            .clone()
            .map(|v| ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::default_dense(v))));
        let sparse = query
            .text
            .as_deref()
            .map(|t| self.keywords.query(t))
            .filter(|v| !v.indices.is_empty())
            .map(|v| {
                ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(
                    qdrant_edge::VectorInternal::Sparse(v),
                    SPARSE_VECTOR,
                )))
            });
        let threshold = min_score.map(Into::into);
        // A fused score is rescaled so that 1 means first in both rankings.
        let mut score_scale = 1.0;
        let (prefetches, scoring, threshold) = match (dense, sparse) {
            (Some(dense), Some(sparse)) => {
                let candidates = end.clamp(FUSION_CANDIDATES, MAX_SEARCH_HITS);
                let prefetch = |prefetches, query, limit, score_threshold| Prefetch {
                    prefetches,
                    query: Some(query),
                    limit,
                    params: None,
                    filter: Some(filter.clone()),
                    score_threshold,
                };
                // With a floor on the cosine, the keyword ranking only reorders the points
                // above it (the dense ones passing it, up to the hit cap), so every hit passes;
                // points sharing no word with the question are left out of that ranking.
                let keyword = match threshold {
                    None => prefetch(Vec::new(), sparse, candidates, None),
                    Some(t) => prefetch(
                        vec![prefetch(
                            Vec::new(),
                            dense.clone(),
                            MAX_SEARCH_HITS,
                            Some(t),
                        )],
                        sparse,
                        candidates,
                        Some(f32::MIN_POSITIVE.into()),
                    ),
                };
                // Qdrant counts ranks from 0: first in both scores 2 / RRF_K.
                score_scale = RRF_K as f32 / 2.0;
                (
                    vec![prefetch(Vec::new(), dense, candidates, threshold), keyword],
                    ScoringQuery::Fusion(Fusion::Rrf {
                        k: RRF_K,
                        weights: None,
                    }),
                    None,
                )
            }
            (Some(one), None) | (None, Some(one)) => (Vec::new(), one, threshold),
            (None, None) => return Ok(Vec::new()),
        };
        let request = QueryRequest {
            prefetches,
            query: Some(scoring),
            filter: Some(filter),
            score_threshold: threshold,
            // Room past the end so that ties there are settled below, not by the engine.
            limit: end.saturating_add(TIE_ROOM).min(MAX_SEARCH_HITS),
            offset: 0,
            params: None,
            with_vector: WithVector::Bool(false),
            with_payload: WithPayloadInterface::Bool(true),
        };
        let mut points = self.shard.query(request).map_err(|e| self.err(e))?;
        // Equal scores are common in a fused ranking (second in one ranking, absent from the
        // other) and the engine orders them differently from call to call: ties go by point
        // id, so that the same search always pages the same way.
        points.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        Ok(points
            .into_iter()
            .take(end)
            .skip(offset)
            .map(|p| {
                payload::hit(
                    &p.payload.map(|p| p.0).unwrap_or_default(),
                    p.score * score_scale,
                )
            })
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
        self.scroll(
            None,
            WithPayloadInterface::Fields(fields),
            false,
            &mut |r| {
                visit(payload::record(&r.payload.map(|p| p.0).unwrap_or_default()));
            },
        )
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
                let keyword = keyword_text(
                    &c.chunk.text,
                    c.chunk.context_ref.section_id.as_deref(),
                    &c.locators,
                );
                PointStruct::new(
                    point_id(&scope_key, &c.content_hash, c.chunk.index),
                    Vectors::new_named([
                        ("", Vector::from(c.vector.clone())),
                        (
                            SPARSE_VECTOR,
                            Vector::from(self.keywords.document(&keyword)),
                        ),
                    ]),
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

    /// Qdrant Edge never optimizes by itself: without this, every search is exact over all
    /// points (about 25 ms at 100 000 chunks on 2 cores instead of a few).
    fn optimize(&self) -> Result<bool> {
        self.shard
            .optimize()
            .map_err(|e| store_error(&self.path, e))
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
                false,
                &mut |r| match r.id {
                    PointId::NumId(n) => ids.push(n),
                    other => panic!("unexpected id {other:?}"),
                },
            )
            .unwrap();
        ids.sort_unstable();
        ids
    }

    /// Export then import gives another shard the same points (ids, vectors, payloads) and
    /// the same answers, dense and by words (keyword vectors come back from the payloads),
    /// while the optimizer runs over it.
    #[test]
    fn exported_points_imported_elsewhere_answer_the_same() {
        let alice = Scope::user("alice");
        let (_a, from) = open();
        from.upsert(&alice, &chunks("h", 4, "alice/a.txt", 0))
            .unwrap();
        from.upsert(&alice, &chunks("g", 3, "alice/b.txt", 2))
            .unwrap();
        let mut points = Vec::new();
        from.export_points(&mut |p| points.push(p)).unwrap();
        assert_eq!(points.len(), 7);
        let (_b, to) = open();
        to.import_points(&points).unwrap();
        to.optimize().unwrap();
        let mut again = Vec::new();
        to.export_points(&mut |p| again.push(p)).unwrap();
        points.sort_by_key(|p| p.id);
        again.sort_by_key(|p| p.id);
        assert_eq!(points, again);
        let all = SearchFilter::default();
        for query in [
            IndexQuery::dense(unit(2)),
            IndexQuery {
                vector: None,
                text: Some("chunk".into()),
            },
        ] {
            let a = from.search(&alice, &query, 10, 0, None, &all).unwrap();
            let b = to.search(&alice, &query, 10, 0, None, &all).unwrap();
            assert!(!a.is_empty());
            assert_eq!(a, b);
        }
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

        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(0)),
                10,
                0,
                None,
                &SearchFilter::default(),
            )
            .unwrap();
        assert_eq!(hits.len(), 2, "{hits:#?}");
        assert_eq!(hits[0].locator, "alice/a.txt#line=1");
        assert!((hits[0].score - 1.0).abs() < 1e-4, "{}", hits[0].score);
        assert!(hits.iter().all(|h| h.locator.starts_with("alice/")));
        // Bob's own content, searched for exactly, is not Alice's to find.
        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(5)),
                10,
                0,
                Some(0.5),
                &SearchFilter::default(),
            )
            .unwrap();
        assert!(hits.is_empty(), "{hits:#?}");
        let hits = store
            .search(
                &bob,
                &IndexQuery::dense(unit(5)),
                1,
                0,
                Some(0.5),
                &SearchFilter::default(),
            )
            .unwrap();
        assert_eq!(hits[0].locator, "bob/b.txt#line=1");
        assert!(store
            .search(
                &Scope::user("carol"),
                &IndexQuery::dense(unit(0)),
                10,
                0,
                None,
                &SearchFilter::default()
            )
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
        let hits = store
            .search(
                &in_mandate("bob"),
                &IndexQuery::dense(unit(0)),
                10,
                0,
                None,
                &SearchFilter::default(),
            )
            .unwrap();
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
        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(1)),
                1,
                0,
                None,
                &SearchFilter::default(),
            )
            .unwrap();
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
            store
                .search(
                    &alice,
                    &IndexQuery::dense(unit(0)),
                    1,
                    0,
                    None,
                    &SearchFilter::default()
                )
                .unwrap()[0]
                .locator,
            "a.txt#line=1"
        );
    }

    /// The files (hit locators without fragment) `scope` finds through `filter`, sorted, and
    /// checked to be what the scope alone may read.
    fn found(store: &EdgeIndex, scope: &Scope, filter: SearchFilter) -> Vec<String> {
        let hits = store
            .search(scope, &IndexQuery::dense(unit(0)), 1000, 0, None, &filter)
            .unwrap();
        let mut files: Vec<String> = hits
            .iter()
            .map(|h| h.locator.split('#').next().unwrap().to_string())
            .collect();
        files.sort();
        files.dedup();
        files
    }

    /// The hit locators (with fragment) `scope` finds through `filter`, sorted.
    fn found_chunks(store: &EdgeIndex, scope: &Scope, filter: SearchFilter) -> Vec<String> {
        let hits = store
            .search(scope, &IndexQuery::dense(unit(0)), 1000, 0, None, &filter)
            .unwrap();
        let mut out: Vec<String> = hits.into_iter().map(|h| h.locator).collect();
        out.sort();
        out
    }

    fn prefix(p: &str) -> SearchFilter {
        SearchFilter {
            locator_prefix: Some(p.into()),
            ..SearchFilter::default()
        }
    }

    const NESTED: &str = "/d/bundle.zip!/docs/inner.tar.gz!/notes/n.md";

    /// Alice's files: a folder, a sibling sharing its name's start, a nested archive, an
    /// upload, and paged, sectioned, sheeted, slided and image contents. Bob holds
    /// `/d/a/x.txt` and `/d/p.pdf` too.
    fn corpus() -> (tempfile::TempDir, EdgeIndex, Scope, Scope) {
        let (dir, store) = open();
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        let up = |scope: &Scope, c: Vec<StoredChunk>| store.upsert(scope, &c).unwrap();
        up(&alice, chunks("ha", 2, "/d/a/x.txt", 0));
        up(&alice, chunks("hab", 1, "/d/ab.txt", 10));
        up(&alice, chunks("hnested", 1, NESTED, 20));
        up(&alice, chunks("hzip", 1, "/d/bundle.zip!/readme.txt", 30));
        up(&alice, chunks("hup", 1, "upload.zip!/a.txt", 40));
        let sections = [
            None,
            Some("1 Intro"),
            Some("2 Setup"),
            Some("2 Setup › 2.1 Install"),
            Some("2 Setupx"),
            Some("3 Use › 2 Setup"),
        ];
        let mut pdf = chunks("hpdf", 6, "/d/p.pdf", 50);
        for (i, c) in pdf.iter_mut().enumerate() {
            let ctx = &mut c.chunk.context_ref;
            ctx.page_index = Some(i as u32 + 1);
            ctx.location = format!("/d/p.pdf#page={}", i + 1);
            ctx.section_id = sections[i].map(str::to_string);
        }
        up(&alice, pdf.clone());
        for c in &mut pdf {
            c.chunk.text = format!("bob's {}", c.chunk.text);
        }
        up(&bob, pdf);
        let mut sheets = chunks("hxlsx", 2, "/d/s.xlsx", 60);
        for (c, name) in sheets.iter_mut().zip(["Budget", "Budget 2"]) {
            c.chunk.context_ref.sheet_name = Some(name.into());
            c.chunk.context_ref.location = format!("/d/s.xlsx#sheet={name}");
        }
        up(&alice, sheets);
        let mut deck = chunks("hpptx", 3, "/d/deck.pptx", 70);
        for (i, c) in deck.iter_mut().enumerate() {
            c.chunk.context_ref.slide_index = Some(i as u32 + 1);
            c.chunk.context_ref.location = format!("/d/deck.pptx#slide={}", i + 1);
        }
        up(&alice, deck);
        let mut image = chunks("hpng", 1, "/d/a/pic.png", 80);
        image[0].chunk.content_type = extractors::ContentType::Image;
        up(&alice, image);
        up(&bob, chunks("hbob", 1, "/d/a/x.txt", 90));
        up(&bob, chunks("hbob2", 1, "/d/a/bobs.txt", 91));
        (dir, store, alice, bob)
    }

    #[test]
    fn a_locator_prefix_matches_whole_folders_archives_and_files_only() {
        let (_dir, store, alice, bob) = corpus();
        // No filter: everything Alice holds.
        assert_eq!(found(&store, &alice, SearchFilter::default()).len(), 9);
        assert_eq!(
            found(&store, &alice, prefix("/d/a")),
            ["/d/a/pic.png", "/d/a/x.txt"],
            "a folder, not its sibling /d/ab.txt"
        );
        assert_eq!(
            found(&store, &alice, prefix("/d/a/")),
            ["/d/a/pic.png", "/d/a/x.txt"]
        );
        assert_eq!(
            found(&store, &alice, prefix("/d/bundle.zip")),
            [NESTED, "/d/bundle.zip!/readme.txt"],
            "an archive"
        );
        assert_eq!(
            found(&store, &alice, prefix("/d/bundle.zip!/")),
            [NESTED, "/d/bundle.zip!/readme.txt"]
        );
        for nested in [
            "/d/bundle.zip!/docs",
            "/d/bundle.zip!/docs/inner.tar.gz",
            "/d/bundle.zip!/docs/inner.tar.gz!/notes",
            NESTED,
        ] {
            assert_eq!(found(&store, &alice, prefix(nested)), [NESTED], "{nested}");
        }
        assert_eq!(
            found(&store, &alice, prefix("/d/ab.txt")),
            ["/d/ab.txt"],
            "a file"
        );
        assert_eq!(found(&store, &alice, prefix("/d/p.pdf")), ["/d/p.pdf"]);
        assert_eq!(
            found(&store, &alice, prefix("upload.zip")),
            ["upload.zip!/a.txt"]
        );
        assert_eq!(
            found(&store, &alice, prefix("upload.zip!/a.txt")),
            ["upload.zip!/a.txt"]
        );
        for nothing in [
            "/d/a/x",
            "/d/bundle",
            "/d/bundle.zip!/docs/inner",
            "/x",
            "d",
            "a.txt",
        ] {
            assert!(
                found(&store, &alice, prefix(nothing)).is_empty(),
                "{nothing}"
            );
        }
        // `/` and an empty prefix narrow nothing (within the scope).
        assert_eq!(found(&store, &alice, prefix("/")).len(), 9);
        assert_eq!(found(&store, &alice, prefix("")).len(), 9);
        // Bob's files under the same folder never reach Alice, nor hers him.
        assert_eq!(
            found(&store, &bob, prefix("/d/a")),
            ["/d/a/bobs.txt", "/d/a/x.txt"]
        );
        let bobs = store
            .search(
                &bob,
                &IndexQuery::dense(unit(0)),
                100,
                0,
                None,
                &prefix("/d/a"),
            )
            .unwrap();
        assert!(
            bobs.iter().all(|h| h.content_hash.starts_with("hbob")),
            "{bobs:#?}"
        );
        assert!(found(&store, &alice, prefix("/d/a/bobs.txt")).is_empty());
        assert!(found(&store, &Scope::user("carol"), prefix("/d")).is_empty());
    }

    #[test]
    fn pages_sections_sheets_slides_and_types_narrow_the_hits() {
        let (_dir, store, alice, bob) = corpus();
        let pages = |first, last| SearchFilter {
            pages: Some((first, last)),
            ..SearchFilter::default()
        };
        assert_eq!(
            found_chunks(&store, &alice, pages(2, 3)),
            ["/d/p.pdf#page=2", "/d/p.pdf#page=3"]
        );
        assert_eq!(
            found_chunks(&store, &alice, pages(6, 6)),
            ["/d/p.pdf#page=6"]
        );
        assert!(found_chunks(&store, &alice, pages(7, 100)).is_empty());
        assert!(found_chunks(&store, &alice, pages(3, 2)).is_empty());
        // Pages and a prefix together.
        let both = SearchFilter {
            locator_prefix: Some("/d/a".into()),
            ..pages(1, 6)
        };
        assert!(found_chunks(&store, &alice, both).is_empty());

        let section = |s: &str| SearchFilter {
            section_path: Some(s.into()),
            ..SearchFilter::default()
        };
        assert_eq!(
            found_chunks(&store, &alice, section("2 Setup")),
            ["/d/p.pdf#page=3", "/d/p.pdf#page=4"],
            "the section and its subsection, not `2 Setupx` nor `3 Use › 2 Setup`"
        );
        assert_eq!(
            found_chunks(&store, &alice, section("2 Setup › 2.1 Install")),
            ["/d/p.pdf#page=4"]
        );
        assert_eq!(
            found_chunks(&store, &alice, section("3 Use")),
            ["/d/p.pdf#page=6"]
        );
        assert!(found_chunks(&store, &alice, section("2.1 Install")).is_empty());

        let sheet = |s: &str| SearchFilter {
            sheet: Some(s.into()),
            ..SearchFilter::default()
        };
        assert_eq!(
            found_chunks(&store, &alice, sheet("Budget")),
            ["/d/s.xlsx#sheet=Budget"]
        );
        assert!(found_chunks(&store, &alice, sheet("budget")).is_empty());

        let slide = SearchFilter {
            slide: Some(2),
            ..SearchFilter::default()
        };
        assert_eq!(
            found_chunks(&store, &alice, slide),
            ["/d/deck.pptx#slide=2"]
        );

        let image = SearchFilter {
            content_type: Some(extractors::ContentType::Image),
            ..SearchFilter::default()
        };
        let hits = store
            .search(&alice, &IndexQuery::dense(unit(0)), 100, 0, None, &image)
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].locator, "/d/a/pic.png#line=1");
        assert_eq!(hits[0].content_type, "image");
        let text = SearchFilter {
            content_type: Some(extractors::ContentType::Text),
            ..SearchFilter::default()
        };
        assert_eq!(
            store
                .search(&alice, &IndexQuery::dense(unit(0)), 100, 0, None, &text)
                .unwrap()
                .len(),
            2 + 1 + 1 + 1 + 1 + 6 + 2 + 3
        );
        // Bob holds the same PDF: his filters find his points only.
        let hits = store
            .search(
                &bob,
                &IndexQuery::dense(unit(0)),
                100,
                0,
                None,
                &pages(1, 6),
            )
            .unwrap();
        assert_eq!(hits.len(), 6);
        assert!(
            hits.iter().all(|h| h.text.starts_with("bob's")),
            "{hits:#?}"
        );
        // A hit carries its page and type.
        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(52)),
                1,
                0,
                None,
                &pages(1, 6),
            )
            .unwrap();
        assert_eq!(hits[0].locator, "/d/p.pdf#page=3");
        assert_eq!(hits[0].page, Some(3));
        assert_eq!(hits[0].section.as_deref(), Some("2 Setup"));
        assert_eq!(hits[0].content_type, "text");
        let json = serde_json::to_value(&hits[0]).unwrap();
        assert_eq!(json["page"], 3);
        let plain = &store
            .search(
                &alice,
                &IndexQuery::dense(unit(10)),
                1,
                0,
                None,
                &SearchFilter::default(),
            )
            .unwrap()[0];
        assert_eq!(plain.locator, "/d/ab.txt#line=1");
        assert_eq!(plain.page, None);
        assert!(serde_json::to_value(plain).unwrap().get("page").is_none());
    }

    #[test]
    fn a_filter_never_lets_another_scopes_points_through() {
        let (_dir, store, alice, bob) = corpus();
        let filters = [
            SearchFilter::default(),
            prefix("/d"),
            prefix("/d/a/x.txt"),
            SearchFilter {
                pages: Some((1, 6)),
                section_path: Some("2 Setup".into()),
                ..prefix("/d/p.pdf")
            },
        ];
        for f in filters {
            let a = store
                .search(&alice, &IndexQuery::dense(unit(90)), 1000, 0, None, &f)
                .unwrap();
            let b = store
                .search(&bob, &IndexQuery::dense(unit(90)), 1000, 0, None, &f)
                .unwrap();
            // Bob's texts start with `bob's` (his copy of the PDF) or `hbob`.
            let bobs = |h: &Hit| h.text.starts_with("bob's") || h.text.starts_with("hbob");
            assert!(!a.is_empty() && !a.iter().any(bobs), "{f:?} {a:#?}");
            assert!(!b.is_empty() && b.iter().all(bobs), "{f:?} {b:#?}");
            let carol = store
                .search(
                    &Scope::user("carol"),
                    &IndexQuery::dense(unit(0)),
                    1000,
                    0,
                    None,
                    &f,
                )
                .unwrap();
            assert!(carol.is_empty(), "{f:?}");
        }
        // A mandate scope sees shared points of its mandate only, filtered or not.
        let m = |user: &str, shared: bool| Scope {
            mandate_id: Some("m".into()),
            is_shared: shared,
            ..Scope::user(user)
        };
        store
            .upsert(
                &m("alice", true),
                &chunks("hshared", 1, "/d/a/shared.txt", 95),
            )
            .unwrap();
        store
            .upsert(&m("alice", false), &chunks("hmine", 1, "/d/a/mine.txt", 96))
            .unwrap();
        assert_eq!(
            found(&store, &m("dave", false), prefix("/d/a")),
            ["/d/a/shared.txt"]
        );
        let other = Scope {
            mandate_id: Some("other".into()),
            ..Scope::user("dave")
        };
        assert!(found(&store, &other, prefix("/d/a")).is_empty());
    }

    #[test]
    fn set_locators_moves_the_prefix_match() {
        let (_dir, store, alice, bob) = corpus();
        store
            .set_locators(
                &alice,
                "ha",
                &["/d/moved/x.txt".to_string(), "/d/z.zip!/x.txt".to_string()],
            )
            .unwrap();
        assert_eq!(found(&store, &alice, prefix("/d/a")), ["/d/a/pic.png"]);
        assert!(found(&store, &alice, prefix("/d/a/x.txt")).is_empty());
        assert_eq!(
            found(&store, &alice, prefix("/d/moved")),
            ["/d/moved/x.txt"]
        );
        // Any holder puts the content under its prefix; the hit shows the first.
        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(0)),
                10,
                0,
                None,
                &prefix("/d/z.zip"),
            )
            .unwrap();
        assert_eq!(hits.len(), 2);
        assert!(hits
            .iter()
            .all(|h| h.locator.starts_with("/d/moved/x.txt#")));
        assert!(hits.iter().all(|h| h.also_in == ["/d/z.zip!/x.txt"]));
        // Bob's copy at the old place is untouched.
        assert_eq!(found(&store, &bob, prefix("/d/a/x.txt")), ["/d/a/x.txt"]);
    }

    #[test]
    fn offset_skips_the_best_hits_for_paging() {
        let (_dir, store, alice, _bob) = corpus();
        let all = SearchFilter::default();
        // The query leans on the PDF's chunks in order: page 1 best, then 2, ...
        let mut query = vec![0.0; crate::embed::DIMENSIONS];
        for (i, w) in [6.0, 5.0, 4.0, 3.0, 2.0, 1.0].into_iter().enumerate() {
            query[50 + i] = w;
        }
        let first = store
            .search(&alice, &IndexQuery::dense(query.clone()), 6, 0, None, &all)
            .unwrap();
        let locs = |h: &[Hit]| h.iter().map(|h| h.locator.clone()).collect::<Vec<_>>();
        assert_eq!(
            locs(&first),
            (1..=6)
                .map(|p| format!("/d/p.pdf#page={p}"))
                .collect::<Vec<_>>()
        );
        let page2 = store
            .search(&alice, &IndexQuery::dense(query.clone()), 2, 2, None, &all)
            .unwrap();
        assert_eq!(locs(&page2), locs(&first[2..4]));
        let tail = store
            .search(
                &alice,
                &IndexQuery::dense(query.clone()),
                10,
                4,
                Some(0.1),
                &all,
            )
            .unwrap();
        assert_eq!(locs(&tail), locs(&first[4..]));
        assert!(store
            .search(
                &alice,
                &IndexQuery::dense(query.clone()),
                5,
                6,
                Some(0.1),
                &all
            )
            .unwrap()
            .is_empty());
        assert!(store
            .search(&alice, &IndexQuery::dense(query.clone()), 0, 0, None, &all)
            .unwrap()
            .is_empty());
        assert!(store
            .search(
                &alice,
                &IndexQuery::dense(query),
                5,
                MAX_SEARCH_HITS,
                None,
                &all
            )
            .unwrap()
            .is_empty());
    }

    #[test]
    fn points_of_an_earlier_version_get_the_search_fields_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let alice = Scope::user("alice");
        {
            let store = EdgeIndex::open(dir.path()).unwrap();
            let mut pdf = chunks("hpdf", 2, "/d/z.zip!/p.pdf", 0);
            pdf[1].chunk.context_ref.section_id = Some("2 Setup › 2.1 Install".into());
            store.upsert(&alice, &pdf).unwrap();
            store
                .upsert(&alice, &chunks("ht", 1, "/d/t.txt", 5))
                .unwrap();
            // Make it a shard of the version before: no derived fields, no index on them.
            let keys = ["containers", "section_path"]
                .map(|k| k.parse().unwrap())
                .to_vec();
            store
                .update(UpdateOperation::PayloadOperation(
                    PayloadOps::DeletePayload(qdrant_edge::DeletePayloadOp {
                        keys,
                        points: None,
                        filter: Some(filter(payload::scope_filter(&alice)).unwrap()),
                    }),
                ))
                .unwrap();
            for field in ["containers", "section_path"] {
                store
                    .update(UpdateOperation::FieldIndexOperation(
                        FieldIndexOperations::DeleteIndex(field.parse().unwrap()),
                    ))
                    .unwrap();
            }
            assert!(!store.has_payload_index("containers").unwrap());
            assert!(found(&store, &alice, prefix("/d/z.zip")).is_empty());
            store.flush();
        }
        let store = EdgeIndex::open(dir.path()).unwrap();
        assert!(store.has_payload_index("containers").unwrap());
        assert!(store.has_payload_index("section_path").unwrap());
        assert_eq!(
            found(&store, &alice, prefix("/d/z.zip")),
            ["/d/z.zip!/p.pdf"]
        );
        assert_eq!(found(&store, &alice, prefix("/d")).len(), 2);
        let install = SearchFilter {
            section_path: Some("2 Setup".into()),
            ..SearchFilter::default()
        };
        assert_eq!(
            found_chunks(&store, &alice, install),
            ["/d/z.zip!/p.pdf#line=2"]
        );
        assert_eq!(store.count(None).unwrap(), 3);
    }

    /// Chunks with these texts (and sections) in `locator`, chunk `i` along axis `i`.
    fn texts(hash: &str, locator: &str, texts: &[(&str, Option<&str>)]) -> Vec<StoredChunk> {
        let mut out = chunks(hash, texts.len() as u32, locator, 0);
        for (c, (text, section)) in out.iter_mut().zip(texts) {
            c.chunk.text = text.to_string();
            c.chunk.context_ref.section_id = section.map(str::to_string);
        }
        out
    }

    fn locators(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.locator.as_str()).collect()
    }

    #[test]
    fn keyword_search_finds_rare_terms_file_names_and_sections_and_hybrid_fuses() {
        let (_dir, store) = open();
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        store
            .upsert(
                &alice,
                &texts(
                    "iso",
                    "/d/iso-4217-currencies.csv",
                    &[
                        ("Switzerland, Swiss franc, CHF, 756", None),
                        ("Sweden, Swedish krona, SEK, 752", None),
                    ],
                ),
            )
            .unwrap();
        store
            .upsert(
                &alice,
                &texts(
                    "man",
                    "/d/pump.pdf",
                    &[
                        ("Open the valve slowly.", Some("3 Priming")),
                        ("Close the valve.", Some("4 Storage")),
                    ],
                ),
            )
            .unwrap();
        // Bob's identical words are never Alice's hits.
        store
            .upsert(
                &bob,
                &texts("iso", "/b/iso.csv", &[("Swiss franc CHF", None)]),
            )
            .unwrap();
        let all = SearchFilter::default();
        let keyword = |q: &str| {
            store
                .search(&alice, &IndexQuery::keyword(q), 10, 0, None, &all)
                .unwrap()
        };
        // A code found by its exact word.
        assert_eq!(
            locators(&keyword("CHF"))[..1],
            ["/d/iso-4217-currencies.csv#line=1"]
        );
        // The file name and the section path are matched as words too.
        let currencies = keyword("currencies");
        let mut by_name = locators(&currencies);
        by_name.sort_unstable();
        assert_eq!(
            by_name,
            [
                "/d/iso-4217-currencies.csv#line=1",
                "/d/iso-4217-currencies.csv#line=2"
            ]
        );
        assert_eq!(locators(&keyword("priming")), ["/d/pump.pdf#line=1"]);
        // Words nobody holds, or only stop words: nothing.
        assert!(keyword("zebra").is_empty());
        assert!(keyword("the of and").is_empty());
        // Filters apply to keyword hits as to dense ones.
        let pump = SearchFilter {
            locator_prefix: Some("/d/pump.pdf".into()),
            ..SearchFilter::default()
        };
        assert!(store
            .search(&alice, &IndexQuery::keyword("CHF"), 10, 0, None, &pump)
            .unwrap()
            .is_empty());

        // Hybrid: the dense vector points at line 2 of the pump manual (axis 1), the words
        // at the franc. Both come back, the one first in both rankings on top with score 1.
        let hybrid = |text: &str, axis: usize| {
            store
                .search(
                    &alice,
                    &IndexQuery {
                        vector: Some(unit(axis)),
                        text: Some(text.into()),
                    },
                    3,
                    0,
                    None,
                    &all,
                )
                .unwrap()
        };
        let hits = hybrid("swiss franc", 1);
        let found = locators(&hits);
        assert!(
            found.contains(&"/d/iso-4217-currencies.csv#line=1"),
            "{found:?}"
        );
        assert!(found.contains(&"/d/pump.pdf#line=2"), "{found:?}");
        // A floor on the cosine holds in hybrid mode too: the franc's words match, its
        // meaning (axis 0 against axis 1) does not.
        let floored = store
            .search(
                &alice,
                &IndexQuery {
                    vector: Some(unit(1)),
                    text: Some("swiss franc valve".into()),
                },
                10,
                0,
                Some(0.5),
                &all,
            )
            .unwrap();
        // (Line 2 of both files lies on axis 1, the franc on axis 0.)
        let mut floored = locators(&floored);
        floored.sort_unstable();
        assert_eq!(
            floored,
            ["/d/iso-4217-currencies.csv#line=2", "/d/pump.pdf#line=2"]
        );
        let hits = hybrid("valve storage", 1);
        assert_eq!(hits[0].locator, "/d/pump.pdf#line=2");
        assert!((hits[0].score - 1.0).abs() < 1e-4, "{}", hits[0].score);
        assert!(hits.iter().all(|h| h.locator.starts_with("/d/")));
        // Paging a fused ranking: the second page continues the first.
        let page = |limit, offset| {
            let query = IndexQuery {
                vector: Some(unit(0)),
                text: Some("valve franc".into()),
            };
            store
                .search(&alice, &query, limit, offset, None, &all)
                .unwrap()
        };
        let (first, second) = (page(4, 0), page(2, 2));
        assert_eq!(locators(&first)[2..], locators(&second)[..]);
    }

    #[test]
    fn a_shard_of_an_earlier_version_gets_keyword_vectors_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let alice = Scope::user("alice");
        {
            // A shard as versions before keyword search made it: one dense vector, no sparse.
            let path = dir.path().join(SHARD_DIR);
            std::fs::create_dir_all(&path).unwrap();
            let config = EdgeConfigBuilder::new()
                .vector(
                    "",
                    EdgeVectorParamsBuilder::new(DIMENSIONS, Distance::Cosine).build(),
                )
                .on_disk_payload(true)
                .build();
            let shard = EdgeShard::new(&path, config).unwrap();
            let c = &texts("h", "/d/harbour.txt", &[("Bergvik pier", Some("Piers"))])[0];
            let point = PointStruct::new(
                point_id(&alice.key(), "h", 0),
                c.vector.clone(),
                payload::of_chunk(&alice, &alice.key(), c),
            );
            shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::UpsertPoints(PointInsertOperations::PointsList(vec![
                        point.into()
                    ])),
                ))
                .unwrap();
            shard.flush();
        }
        let bergvik = |store: &EdgeIndex| {
            let all = SearchFilter::default();
            let query = IndexQuery::keyword("bergvik");
            store.search(&alice, &query, 5, 0, None, &all).unwrap()
        };
        let store = EdgeIndex::open(dir.path()).unwrap();
        assert_eq!(locators(&bergvik(&store)), ["/d/harbour.txt#line=1"]);
        // New points get both vectors; a reopen finds nothing left to fill in.
        store
            .upsert(&alice, &texts("g", "/d/b.txt", &[("Bergvik ferry", None)]))
            .unwrap();
        store.flush();
        drop(store);
        let store = EdgeIndex::open(dir.path()).unwrap();
        assert_eq!(bergvik(&store).len(), 2);
    }
}
