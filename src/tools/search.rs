//! `search_documents`: the passages that answer a query, within the scope and the filters,
//! best first, each with a snippet centred on what matched.

use std::collections::HashMap;

use extractors::Scope;
use serde_json::{json, Map, Value};

use super::budget::Budget;
use super::cursor;
use super::paging::{fill_list, ListItems};
use super::read::{parse_pages, parse_type};
use super::section::Section;
use super::snippet::snippet;
use super::view::{self, normalize, View};
use super::{Finished, FullResult, SearchArgs, ToolError};
use crate::embed::ChunkKind;
use crate::index::objects::PackReader;
use crate::index::{Hit, SearchFilter};
use crate::ingestor::Ingestor;

/// The cursor tag of `search_documents`.
const TAG: &str = "q";

/// Hits when the call does not say, and the most it may ask for.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 50;

/// Snippet length bounds, in chars.
const MIN_SNIPPET: usize = 80;
const MAX_SNIPPET: usize = 400;

/// The filter `args` ask for, checked against what the scope sees.
fn filter(ingestor: &Ingestor, view: &View, args: &SearchArgs) -> Result<SearchFilter, ToolError> {
    let mut f = SearchFilter::default();
    if let Some(loc) = args
        .locator
        .as_deref()
        .map(normalize)
        .filter(|l| !l.is_empty())
    {
        if !view.knows(&loc) {
            return Err(ToolError::NotFound(loc));
        }
        f.locator_prefix = Some(loc);
    }
    if let Some(name) = &args.source {
        // The source's own files: its scope's key, under its root.
        let registered = super::sources::find(ingestor, view.reader(), name)?;
        let url = registered.source_url().map_err(ToolError::Invalid)?;
        let root = url.locator_root();
        if let Some(loc) = &f.locator_prefix {
            let inside = loc == &root
                || loc
                    .strip_prefix(root.as_str())
                    .is_some_and(|r| r.starts_with('/') || r.starts_with("!/"));
            if !inside {
                return Err(ToolError::Invalid(format!(
                    "locator {loc} is not inside source {name} ({root})"
                )));
            }
        } else {
            f.locator_prefix = Some(root);
        }
        f.owner_key = Some(registered.owner().key());
    }
    if let Some(label) = &args.owner {
        // The view holds that owner's files only: its key narrows the points alike.
        let owner = view
            .entries
            .keys()
            .find_map(|l| view.owner_of(l))
            .ok_or_else(|| ToolError::NotFound(format!("owner {label}")))?;
        f.owner_key = Some(owner.key());
    }
    if let Some(t) = &args.content_type {
        f.content_type = Some(parse_type(t)?);
    }
    f.kind = args
        .kind
        .as_deref()
        .map(str::parse::<ChunkKind>)
        .transpose()
        .map_err(ToolError::Invalid)?;
    if let Some(p) = &args.pages {
        f.pages = Some(parse_pages(p)?);
    }
    f.sheet = args.sheet.clone();
    f.slide = args.slide;
    f.shared = args.shared;
    if let Some(tags) = &args.tags {
        f.tags = crate::uploads::encode_tags(&tags.0).map_err(|e| match e {
            crate::Error::Upload(why) => ToolError::Invalid(format!("tags: {why}")),
            other => ToolError::Internal(other),
        })?;
    }
    if let Some(id) = &args.section {
        let Some(loc) = &f.locator_prefix else {
            return Err(ToolError::Invalid(
                "section needs locator: the file whose outline the section id comes from".into(),
            ));
        };
        let doc = view.document(loc)?;
        let section = Section::resolve(&view::content_index(ingestor, &doc.hash)?, id)?;
        section.narrow(&mut f);
    }
    Ok(f)
}

/// A score to three decimals (as f64: an f32 prints its binary expansion).
pub(super) fn rounded(score: f32) -> f64 {
    (f64::from(score) * 1000.0).round() / 1000.0
}

fn hit_value(hit: &Hit, reader: &Scope, query: &str, snippet_chars: usize) -> Value {
    let mut m = Map::new();
    m.insert("locator".into(), json!(hit.locator));
    view::note_owner(&mut m, reader, &hit.owner, &[]);
    m.insert("score".into(), json!(rounded(hit.score)));
    m.insert("relevance".into(), json!(rounded(hit.relevance)));
    m.insert("confidence".into(), json!(hit.confidence.as_str()));
    m.insert(
        "file".into(),
        json!(extractors::file_name_part(&hit.locator)),
    );
    m.insert("type".into(), json!(hit.content_type));
    if hit.kind == ChunkKind::Card {
        m.insert("kind".into(), json!(ChunkKind::Card.as_str()));
    }
    if let Some(l) = &hit.label {
        m.insert("label".into(), json!(l));
    }
    if let Some(s) = &hit.section {
        m.insert("section".into(), json!(s));
    }
    m.insert(
        "snippet".into(),
        json!(snippet(&hit.text, query, snippet_chars)),
    );
    if !hit.also_in.is_empty() {
        m.insert("also_in".into(), json!(hit.also_in));
    }
    Value::Object(m)
}

/// Where a hit's passage is on its page: the boxes of the lines of its object holding the
/// chunk's text (objects without positions, and passages not found verbatim, give none).
fn hit_boxes(
    ingestor: &Ingestor,
    packs: &mut HashMap<String, Option<PackReader>>,
    hit: &Hit,
) -> Option<Value> {
    let (_, fragment) = extractors::split_fragment(&hit.locator);
    let at = fragment.parse::<extractors::Fragment>().ok()?;
    let page = at.page?;
    // Hits of one file share its pack: opened (its directory read) once per call.
    let pack = packs
        .entry(hit.content_hash.clone())
        .or_insert_with(|| view::pack(ingestor, &hit.content_hash).ok())
        .as_mut()?;
    let needle = hit.text.trim();
    let head: String = needle.chars().take(80).collect();
    for i in 0..pack.objects.len() {
        let o = pack.objects.get(i)?;
        if o.page != Some(page) || o.positions_len == 0 {
            continue;
        }
        let text = pack.text(i).ok()?;
        let (found, len) = match text.find(needle) {
            Some(b) => (b, needle.len()),
            None => match text.find(head.as_str()) {
                Some(b) => (b, head.len()),
                None => continue,
            },
        };
        let a = text.get(..found)?.chars().count();
        let b = a + text.get(found..found + len)?.chars().count();
        let positions = pack.positions(i).ok()??;
        let boxes: Vec<Value> = positions
            .lines
            .iter()
            .filter(|l| (l.start as usize) < b && (l.end as usize) > a)
            .take(64)
            .map(|l| json!({ "page": page, "box": l.bbox }))
            .collect();
        return (!boxes.is_empty()).then(|| Value::Array(boxes));
    }
    None
}

/// The hits `args` ask for in `scope`, best first: the query and limit checked (`limit`
/// defaults to `default_limit`), the filters resolved against what the scope sees. Every
/// face's search comes through here: the tool's budgeted answer below, and the HTTP
/// `/v1/search` answer of whole chunks.
pub fn search_hits(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &SearchArgs,
    default_limit: usize,
) -> Result<Vec<Hit>, ToolError> {
    let query = args.query.trim();
    if query.len() > crate::MAX_QUERY_BYTES {
        return Err(ToolError::Invalid(format!(
            "query is {} bytes: at most {}; say it in fewer words",
            query.len(),
            crate::MAX_QUERY_BYTES
        )));
    }
    if query.is_empty() {
        return Err(ToolError::Invalid(
            "query is empty: say what to look for".into(),
        ));
    }
    let limit = args.limit.unwrap_or(default_limit);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ToolError::Invalid(format!(
            "limit must be between 1 and {MAX_LIMIT}"
        )));
    }
    let view = View::of(ingestor, scope, args.owner.as_deref());
    let filter = filter(ingestor, &view, args)?;
    let mode = args.mode.unwrap_or_default();
    Ok(ingestor.search_filtered(query, scope, limit, args.min_score, &filter, mode)?)
}

/// Each hit's `boxes` from `from` on (the ones before: `None`), when `args` ask for
/// positions; otherwise nothing is looked up.
pub fn boxes_of(
    ingestor: &Ingestor,
    args: &SearchArgs,
    hits: &[Hit],
    from: usize,
) -> Vec<Option<Value>> {
    if !args.positions {
        return vec![None; hits.len()];
    }
    // Hits of one file share its pack: opened once per call.
    let mut packs = HashMap::new();
    hits.iter()
        .enumerate()
        .map(|(i, hit)| {
            (i >= from)
                .then(|| hit_boxes(ingestor, &mut packs, hit))
                .flatten()
        })
        .collect()
}

/// Answer a `search_documents` call.
pub(crate) fn search_documents(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &SearchArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let digest = cursor::digest(args);
    let start = cursor::start(args.cursor.as_deref(), TAG, &digest)?;
    let hits = search_hits(ingestor, scope, args, DEFAULT_LIMIT)?;
    let query = args.query.trim();
    let min_score = args.min_score;
    let full = FullResult::of(hits.iter().map(|h| h.text.as_str()));
    let remaining = hits.len().saturating_sub(start.item).max(1);
    // Share the budget among the hits still to show: shorter snippets, more hits.
    let per_hit = budget.max.saturating_sub(150) / remaining;
    let snippet_chars = per_hit.saturating_sub(220).clamp(MIN_SNIPPET, MAX_SNIPPET);
    let mut items: Vec<Value> = hits
        .iter()
        .map(|h| hit_value(h, scope, query, snippet_chars))
        .collect();
    // Only the hits this answer can show are looked up (the cursor's page onwards).
    for (boxes, item) in boxes_of(ingestor, args, &hits, start.item)
        .into_iter()
        .zip(items.iter_mut())
    {
        if let (Some(boxes), Value::Object(m)) = (boxes, &mut *item) {
            m.insert("boxes".into(), boxes);
        }
    }
    // Compact hits for small budgets: locator, score, and what snippet room is left.
    let compact: Vec<Value> = hits
        .iter()
        .map(|h| {
            let mut m = Map::new();
            m.insert("locator".into(), json!(h.locator));
            view::note_owner(&mut m, scope, &h.owner, &[]);
            m.insert("score".into(), json!(rounded(h.score)));
            if h.confidence == crate::index::Confidence::Low {
                m.insert("confidence".into(), json!(h.confidence.as_str()));
            }
            let room = budget
                .max
                .saturating_sub(180 + h.locator.len())
                .min(MIN_SNIPPET);
            if room >= 10 {
                m.insert("snippet".into(), json!(snippet(&h.text, query, room)));
            }
            Value::Object(m)
        })
        .collect();
    let mut base = Map::new();
    base.insert("query".into(), json!(query));
    if let Some(floor) = min_score {
        base.insert("min_score".into(), json!(rounded(floor)));
    }
    if let Some(note) = super::search_note(&hits, min_score) {
        base.insert("note".into(), json!(note));
    }
    if hits.is_empty() {
        base.insert("hits".into(), json!([]));
        let text = budget.finish(&base)?;
        return Ok(Finished { text, full });
    }
    let text = fill_list(
        budget,
        &base,
        &ListItems::new("hits", items, "hits").with_compact(compact, &["query"]),
        start,
        TAG,
        &digest,
    )?;
    Ok(Finished { text, full })
}
