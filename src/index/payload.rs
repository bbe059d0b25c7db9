//! The payload schema: the fields every point carries, written and read here only, so that
//! every backend stores the same points and filters them the same way. Filters are built in
//! Qdrant's JSON filter syntax, which the embedded shard and the Qdrant server share.
//!
//! A point's payload: the chunk (`text`, `fragment`, `chunk_index`, `object_id`,
//! `content_type`, and its context: `label`, `page_index`, `section_id`, `sheet_name`,
//! `slide_index`), its content (`content_hash`, `locators`: the files holding it, the first
//! shown in results) and its scope (`scope_key`, `user_id`, `feature_instance_id`,
//! `mandate_id`, `is_shared`).

use serde_json::{json, Map, Value};

use super::{Hit, PointRecord, StoredChunk};
use extractors::Scope;

/// Fields with a keyword index: everything searches and deletes filter on.
pub(super) const KEYWORD_FIELDS: &[&str] = &["scope_key", "content_hash", "user_id", "mandate_id"];

/// The fields [`record`] reads: a backend asks only for these when it lists every point.
pub(super) const RECORD_FIELDS: &[&str] = &["scope_key", "content_hash", "chunk_index", "locators"];

/// The payload of chunk `c` stored in `scope` (whose key is `scope_key`).
pub(super) fn of_chunk(scope: &Scope, scope_key: &str, c: &StoredChunk) -> Value {
    let ctx = &c.chunk.context_ref;
    let fragment = ctx
        .location
        .split_once('#')
        .map(|(_, f)| f.to_string())
        .unwrap_or_default();
    json!({
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
    })
}

/// The payload update that points a content's chunks at the files in `locators`.
pub(super) fn locators_update(locators: &[String]) -> Map<String, Value> {
    let mut payload = Map::new();
    payload.insert("locators".into(), json!(locators));
    payload
}

/// The `locators` list of a point's payload (the files holding its content).
fn locators(payload: &Map<String, Value>) -> Vec<String> {
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

/// A point's identity and locators, from a payload holding (at least) [`RECORD_FIELDS`].
pub(super) fn record(payload: &Map<String, Value>) -> PointRecord {
    let text = |k: &str| {
        payload
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    PointRecord {
        scope_key: text("scope_key"),
        content_hash: text("content_hash"),
        chunk_index: payload
            .get("chunk_index")
            .and_then(Value::as_u64)
            .and_then(|i| u32::try_from(i).ok()),
        locators: locators(payload),
    }
}

/// The search result for a point with this full payload and `score`.
pub(super) fn hit(payload: &Map<String, Value>, score: f32) -> Hit {
    let s = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_string);
    let locators = locators(payload);
    let file = locators.first().cloned().unwrap_or_default();
    let locator = match s("fragment").filter(|f| !f.is_empty()) {
        Some(f) => format!("{file}#{f}"),
        None => file,
    };
    Hit {
        locator,
        score,
        text: s("text").unwrap_or_default(),
        section: s("section_id"),
        label: s("label"),
        also_in: locators.into_iter().skip(1).collect(),
        content_hash: s("content_hash").unwrap_or_default(),
    }
}

fn match_kw(key: &str, value: &str) -> Value {
    json!({ "key": key, "match": { "value": value } })
}

/// Filter: points of content `hash` in exactly the scope whose key is `scope_key`.
pub(super) fn content_filter(scope_key: &str, hash: &str) -> Value {
    json!({ "must": [match_kw("scope_key", scope_key), match_kw("content_hash", hash)] })
}

/// Filter: what `scope` may read: its own points (narrowed by feature instance and mandate
/// when set), plus points shared within its mandate.
pub(super) fn scope_filter(scope: &Scope) -> Value {
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
    json!({ "should": should })
}
