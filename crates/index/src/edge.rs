//! [`EdgeIndex`]: the vector index as one embedded Qdrant Edge shard in the data directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use qdrant_edge::{
    CountRequest, CreateIndex, CreateVectorName, Distance, EdgeConfigBuilder, EdgeShard,
    EdgeSparseVectorParamsBuilder, EdgeVectorParamsBuilder, FieldIndexOperations, Filter, Modifier,
    NamedQuery, Payload, PayloadFieldSchema, PayloadOps, PayloadSchemaType, PointInsertOperations,
    PointOperations, PointStruct, PointVectorsPersisted, QueryEnum, QueryRequest, ScoringQuery,
    SetPayloadOp, UpdateOperation, UpdateVectorsOp, Vector, VectorNameConfig, VectorNameOperations,
    VectorOperations, Vectors, WithPayloadInterface, WithVector,
};
use serde_json::Value;

use qdrant_edge::external::ordered_float::OrderedFloat;
use qdrant_edge::{
    Condition, FieldCondition, HasIdCondition, HasVectorCondition, IsEmptyCondition, JsonPath,
    Match, PointId, Range,
};

use super::filter::{
    Condition as TypedCondition, Field, Filter as TypedFilter, Value as TypedValue,
};
use super::keywords::{keyword_text, Keywords, SPARSE_VECTOR};
use super::{
    payload, point_id, ExportedPoint, Hit, Holders, IndexRead, IndexWrite, PointRecord, Ranking,
    StoredChunk, MULTILINGUAL_VECTOR,
};
use crate::embed::DIMENSIONS;
use crate::error::{Error, Result};
use extractors::Scope;

/// The embedded Qdrant Edge shard.
pub struct EdgeIndex {
    shard: EdgeShard,
    path: PathBuf,
    keywords: Keywords,
}

/// The file in the shard's folder naming the keyword analysis its vectors were made with.
const KEYWORD_ANALYSIS_FILE: &str = "keyword-analysis";

/// The keyword analysis of this build ([`Keywords`]: English plus the detected language; a
/// shard without the record has English-only vectors). Raise it whenever the vectors of a
/// text change (the analysis, or the pinned `qdrant-edge` or `whatlang`): every shard then
/// computes its points' vectors again on open.
const KEYWORD_ANALYSIS: u32 = 3;

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

/// A typed filter (built by [`payload`]) in the shard's type: every condition converted.
fn filter(f: &TypedFilter) -> Result<Filter> {
    let list = |conditions: &[TypedCondition]| -> Result<Option<Vec<Condition>>> {
        if conditions.is_empty() {
            return Ok(None);
        }
        conditions
            .iter()
            .map(condition)
            .collect::<Result<_>>()
            .map(Some)
    };
    Ok(Filter {
        should: list(&f.should)?,
        min_should: None,
        must: list(&f.must)?,
        must_not: list(&f.must_not)?,
    })
}

/// A field's path in the shard's type.
fn path(field: Field) -> Result<JsonPath> {
    field
        .key()
        .parse()
        .map_err(|_| Error::Filter(format!("not a payload path: {}", field.key())))
}

fn condition(c: &TypedCondition) -> Result<Condition> {
    Ok(match c {
        TypedCondition::Is(field, value) => Condition::Field(FieldCondition::new_match(
            path(*field)?,
            match value {
                TypedValue::Keyword(s) => Match::from(s.clone()),
                TypedValue::Integer(i) => Match::from(*i),
                TypedValue::Flag(b) => Match::from(*b),
            },
        )),
        TypedCondition::Between { field, first, last } => {
            let bound = |v: i64| Some(OrderedFloat(v as f64));
            Condition::Field(FieldCondition::new_range(
                path(*field)?,
                Range {
                    lt: None,
                    gt: None,
                    gte: bound(*first),
                    lte: bound(*last),
                },
            ))
        }
        TypedCondition::Empty(field) => Condition::IsEmpty(IsEmptyCondition::from(path(*field)?)),
        TypedCondition::HasId(ids) => Condition::HasId(HasIdCondition::from(
            ids.iter()
                .map(|id| PointId::NumId(*id))
                .collect::<ahash::AHashSet<_>>(),
        )),
        TypedCondition::HasKeywordVector => {
            Condition::HasVector(HasVectorCondition::from(SPARSE_VECTOR.to_string()))
        }
        TypedCondition::HasMultilingualVector => {
            Condition::HasVector(HasVectorCondition::from(MULTILINGUAL_VECTOR.to_string()))
        }
        TypedCondition::All(inner) => Condition::Filter(filter(inner)?),
    })
}

impl EdgeIndex {
    /// Open the shard in `data_dir`, creating it on first use.
    pub fn open(data_dir: &Path) -> Result<Self> {
        let path = crate::DataDir::at(data_dir).shard();
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
                .vector(
                    MULTILINGUAL_VECTOR,
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
        // A shard of an earlier version gets the multilingual space (empty: its chunks were
        // embedded by the index model only; new chunks in other languages fill it).
        if existing
            && !index
                .shard
                .config()
                .vectors
                .contains_key(MULTILINGUAL_VECTOR)
        {
            index.update(UpdateOperation::VectorNameOperation(
                VectorNameOperations::CreateVectorName(CreateVectorName {
                    vector_name: MULTILINGUAL_VECTOR.into(),
                    config: serde_json::from_value::<VectorNameConfig>(serde_json::json!({
                        "dense": { "size": DIMENSIONS, "distance": "Cosine" }
                    }))
                    .map_err(|e| index.err(e))?,
                }),
            ))?;
        }
        // A stale analysis gives every point its vector again; points still without one
        // (a crash during an earlier backfill) get theirs next.
        index.keep_keyword_analysis_current(existing)?;
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
            Some(filter(&payload::lacking_derived())?),
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
        let lacking = filter(&payload::lacking_keyword_vector())?;
        self.recompute_keyword_vectors(Some(lacking))
    }

    /// Compute every point's keyword vector again when the shard records another analysis
    /// than [`KEYWORD_ANALYSIS`] (or none), and record this one. A new shard just records
    /// it. Idempotent: a crash before the record repeats the work on the next open.
    fn keep_keyword_analysis_current(&self, existing: bool) -> Result<()> {
        let record = self.path.join(KEYWORD_ANALYSIS_FILE);
        let current = KEYWORD_ANALYSIS.to_string();
        if existing {
            let recorded = match std::fs::read_to_string(&record) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => return Err(Error::io(record, e)),
            };
            if recorded.trim() == current {
                return Ok(());
            }
            tracing::info!(
                from = recorded.trim(),
                to = KEYWORD_ANALYSIS,
                "computing the keyword vectors again (other languages' stemmers and stop words)"
            );
            self.recompute_keyword_vectors(None)?;
        }
        crate::perms::write_file(&record, current.as_bytes())
    }

    /// Compute the keyword vector of every point `which` selects (all: `None`) again from
    /// its payload, a thousand points per update.
    fn recompute_keyword_vectors(&self, which: Option<Filter>) -> Result<()> {
        let fields = self.keyword_source_fields()?;
        let mut pending = Vec::new();
        let mut done = 0usize;
        let mut result = Ok(());
        self.scroll(
            which,
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
            tracing::info!(points = done, "keyword vectors computed from payloads");
            self.shard.flush();
        }
        Ok(())
    }

    /// The payload fields a keyword vector is computed from, as the shard takes them.
    fn keyword_source_fields(&self) -> Result<Vec<qdrant_edge::JsonPath>> {
        payload::KEYWORD_SOURCE_FIELDS
            .iter()
            .map(|f| f.parse())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| self.err("bad payload field name"))
    }

    /// Compute the keyword vector of content `hash`'s card again from its payload: the files
    /// holding the content changed, and a card is matched on all their names.
    fn refresh_card_keywords(&self, scope_key: &str, hash: &str) -> Result<()> {
        let fields = self.keyword_source_fields()?;
        let mut cards = Vec::new();
        self.scroll(
            Some(filter(&payload::card_filter(scope_key, hash))?),
            WithPayloadInterface::Fields(fields),
            false,
            &mut |r| {
                let p = r.payload.map(|p| p.0).unwrap_or_default();
                cards.push(PointVectorsPersisted {
                    id: r.id,
                    vector: self.keyword_vectors(&payload::keyword_source(&p)).into(),
                });
            },
        )?;
        if cards.is_empty() {
            return Ok(());
        }
        self.update_vectors(cards)
    }

    /// A point's vectors: the index model's, the multilingual model's when it has one, and
    /// the keyword vector of `keyword`.
    fn vectors(&self, dense: &[f32], multilingual: Option<&[f32]>, keyword: &str) -> Vectors {
        let mut named = vec![
            ("", Vector::from(dense.to_vec())),
            (SPARSE_VECTOR, Vector::from(self.keywords.document(keyword))),
        ];
        if let Some(m) = multilingual {
            named.push((MULTILINGUAL_VECTOR, Vector::from(m.to_vec())));
        }
        Vectors::new_named(named)
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
            )
            .chain(
                payload::BOOL_FIELDS
                    .iter()
                    .map(|f| (f, PayloadSchemaType::Bool)),
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
    fn rank(
        &self,
        ranking: Ranking<'_>,
        want: usize,
        min_score: Option<f32>,
        typed: &TypedFilter,
    ) -> Result<Vec<Hit>> {
        let dense = matches!(ranking, Ranking::Meaning(_) | Ranking::Multilingual(_));
        let scoring = match ranking {
            Ranking::Meaning(v) => {
                ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::default_dense(v.to_vec())))
            }
            Ranking::Multilingual(v) => ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(
                qdrant_edge::VectorInternal::Dense(v.to_vec()),
                MULTILINGUAL_VECTOR,
            ))),
            Ranking::Words(text) | Ranking::Name(text) => {
                let v = self
                    .keywords
                    .ranking(text, matches!(ranking, Ranking::Name(_)));
                if v.indices.is_empty() {
                    return Ok(Vec::new());
                }
                ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(
                    qdrant_edge::VectorInternal::Sparse(v),
                    SPARSE_VECTOR,
                )))
            }
        };
        // The shard's own `offset` only widens the search (a Qdrant server drops the offset
        // above the shard): paging is done above the trait.
        let request = QueryRequest {
            prefetches: Vec::new(),
            query: Some(scoring),
            filter: Some(filter(typed)?),
            score_threshold: min_score.map(Into::into),
            limit: want,
            offset: 0,
            params: dense.then(|| qdrant_edge::SearchParams {
                hnsw_ef: Some(super::MEANING_SEARCH_EF.max(want)),
                ..Default::default()
            }),
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
            .map(|s| filter(&payload::scope_filter(s)))
            .transpose()?;
        self.shard
            .count(CountRequest {
                filter,
                exact: true,
            })
            .map_err(|e| self.err(e))
    }

    fn multilingual_space(&self) -> bool {
        true
    }

    fn has_multilingual_points(&self) -> Result<bool> {
        let with = filter(&payload::with_multilingual_vector())?;
        let (records, _) = self
            .shard
            .scroll(qdrant_edge::ScrollRequest {
                offset: None,
                limit: Some(1),
                filter: Some(with),
                with_payload: Some(WithPayloadInterface::Bool(false)),
                with_vector: WithVector::Bool(false),
                order_by: None,
            })
            .map_err(|e| self.err(e))?;
        Ok(!records.is_empty())
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

    /// Every point with its dense vector and payload, 1 000 at a time.
    fn export_points(&self, visit: &mut dyn FnMut(ExportedPoint)) -> Result<()> {
        let mut failed = None;
        self.scroll(None, WithPayloadInterface::Bool(true), true, &mut |r| {
            if failed.is_some() {
                return;
            }
            let qdrant_edge::PointId::NumId(id) = r.id else {
                failed = Some(format!("point {} has no numeric id", r.id));
                return;
            };
            let mut multilingual = None;
            let vector = match r.vector {
                Some(qdrant_edge::VectorStructInternal::Named(mut named)) => {
                    if let Some(qdrant_edge::VectorInternal::Dense(v)) =
                        named.remove(MULTILINGUAL_VECTOR)
                    {
                        multilingual = Some(v);
                    }
                    match named.remove("") {
                        Some(qdrant_edge::VectorInternal::Dense(v)) => v,
                        _ => Vec::new(),
                    }
                }
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
                multilingual,
                payload: r.payload.map(|p| p.0).unwrap_or_default(),
            });
        })?;
        failed.map_or(Ok(()), |reason| Err(self.err(reason)))
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
                    c.chunk.kind,
                );
                PointStruct::new(
                    point_id(&scope_key, &c.content_hash, c.chunk.index),
                    self.vectors(&c.vector, c.multilingual.as_deref(), &keyword),
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

    fn set_holders(&self, scope: &Scope, hash: &str, holders: &Holders) -> Result<()> {
        self.update(UpdateOperation::PayloadOperation(PayloadOps::SetPayload(
            SetPayloadOp {
                payload: Payload(payload::holders_update(holders)),
                points: None,
                filter: Some(filter(&payload::content_filter(&scope.key(), hash))?),
                key: None,
            },
        )))?;
        self.refresh_card_keywords(&scope.key(), hash)?;
        crate::failpoint::hit("store.set_locators");
        Ok(())
    }

    fn delete_content_by_key(&self, scope_key: &str, hash: &str) -> Result<()> {
        self.update(UpdateOperation::PointOperation(
            PointOperations::DeletePointsByFilter(filter(&payload::content_filter(
                scope_key, hash,
            ))?),
        ))?;
        crate::failpoint::hit("store.delete");
        Ok(())
    }

    /// Insert `points` as they are (replacing points with the same ids); their keyword
    /// vectors are computed from their payloads, as a backfill does.
    fn import_points(&self, points: &[ExportedPoint]) -> Result<()> {
        if points.is_empty() {
            return Ok(());
        }
        let points = points
            .iter()
            .map(|p| {
                let keyword = payload::keyword_source(&p.payload);
                PointStruct::new(
                    p.id,
                    self.vectors(&p.vector, p.multilingual.as_deref(), &keyword),
                    Value::Object(p.payload.clone()),
                )
                .into()
            })
            .collect();
        self.update(UpdateOperation::PointOperation(
            PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
        ))
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
    use crate::conformance::{found, found_chunks, locators, prefix, texts};
    use crate::testing::chunks;
    use crate::{IndexQuery, SearchFilter};

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
                        filter: Some(filter(&payload::scope_filter(&alice)).unwrap()),
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

    #[test]
    fn a_shard_of_an_earlier_version_gets_keyword_vectors_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let alice = Scope::user("alice");
        {
            // A shard as versions before keyword search made it: one dense vector, no sparse.
            let path = crate::DataDir::at(dir.path()).shard();
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
