//! The workflow tools: `store_tool_result`, `recall_tool_result`, `remember`,
//! `store_summary`, `gather_context` and `end_workflow` (the layer itself is
//! `crate::workflow`). Every call names its `workflow`; the scope around it is the face's, so
//! a workflow is always the caller's own, and a handle of another workflow, user or mandate
//! reads exactly like one that does not exist.

use extractors::Scope;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::sync::atomic::AtomicBool;

use super::budget::{self, Budget};
use super::{cursor, Finished, FullResult, ToolError};
use crate::ingestor::Ingestor;
use crate::workflow::{ContextItem, ContextLayers, ResultMeta};

/// Arguments of `store_tool_result`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreResultArgs {
    /// The workflow (agent run) id the result belongs to.
    pub workflow: String,
    /// The tool that produced the result.
    pub tool: String,
    /// The result: a string (kept exactly) or any JSON value (kept as compact JSON).
    pub content: RawJson,
    /// The arguments the tool was called with (recorded, at most 16 KiB of JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<RawJson>,
    /// Also remember the entities rules find in it (amounts, dates, IBANs, e-mail addresses,
    /// document ids), with this result's handle as their source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_entities: Option<bool>,
    /// Budget of the answer (handle and preview) in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// A JSON value as a call gives it (a tool result, its arguments): its text, taken as it is
/// and never parsed into values (`crate::bounded_json`: a value costs 32 bytes and more
/// whatever its text, so a 16 MiB array of zeros would cost gigabytes).
/// [`RawJson::stored_text`] gives the text a result is stored as.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct RawJson(#[schemars(with = "Value")] Box<RawValue>);

impl RawJson {
    /// A text (a result stored exactly).
    pub fn text_of(text: &str) -> RawJson {
        Self::json_of(&Value::String(text.to_string()))
    }

    /// A JSON value (a result stored as compact JSON).
    pub fn json_of(value: &Value) -> RawJson {
        // A `Value` always serializes.
        match serde_json::value::to_raw_value(value) {
            Ok(raw) => RawJson(raw),
            Err(_) => RawJson::default(),
        }
    }

    /// The text to store and whether it is JSON: a JSON string's value exactly, any other
    /// value as compact JSON (its numbers and key order as given). Refused when that is over
    /// `max` bytes, before more than `max + 1` bytes are made of it.
    pub(crate) fn stored_text(&self, max: u64) -> Result<(String, bool), String> {
        let raw = self.0.get();
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        let too_large =
            |n: String| format!("the tool result is {n} bytes; at most {max} are stored");
        if raw.starts_with('"') {
            let text: String = serde_json::from_str(raw).map_err(|e| e.to_string())?;
            if text.len() > max {
                return Err(too_large(text.len().to_string()));
            }
            return Ok((text, false));
        }
        compact_json(raw, max)
            .map(|text| (text, true))
            .ok_or_else(|| too_large(format!("over {max}")))
    }
}

impl Default for RawJson {
    fn default() -> Self {
        RawJson(RawValue::NULL.to_owned())
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

/// `json` (one valid JSON text) without the whitespace between its tokens, or `None` once
/// that is over `max` bytes. Strings, numbers and key order stay exactly as written.
fn compact_json(json: &str, max: usize) -> Option<String> {
    let mut out = Vec::with_capacity(json.len().min(max.saturating_add(1)));
    let (mut in_string, mut escaped) = (false, false);
    for &b in json.as_bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        } else if b == b'"' {
            in_string = true;
        }
        if out.len() == max {
            return None;
        }
        out.push(b);
    }
    // Whitespace is ASCII and was dropped only between tokens: still UTF-8.
    String::from_utf8(out).ok()
}

/// Arguments of `recall_tool_result`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The workflow the result was stored in.
    pub workflow: String,
    /// The handle `store_tool_result` returned (`tr_3`).
    pub handle: String,
    /// Only these 1-based lines of the result: `"120"` or `"120-180"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<String>,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The `cursor` of the previous answer, to continue it (repeat the other arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Arguments of `remember`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The workflow the entity belongs to.
    pub workflow: String,
    /// What the entity is called (`customer`, `invoice_total`); remembering a key again
    /// replaces its value.
    pub key: String,
    /// Its value.
    pub value: String,
    /// Where it came from: a handle, a locator, a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// Arguments of `store_summary`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummaryArgs {
    /// The workflow the summary belongs to.
    pub workflow: String,
    /// The conversation summary.
    pub text: String,
    /// What it covers, e.g. `rounds 1-12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covers: Option<String>,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// Arguments of `gather_context`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatherArgs {
    /// What the next round is about, in plain words.
    pub query: String,
    /// The workflow (agent run) whose entities, summary and tool results to include.
    pub workflow: String,
    /// Per layer, the most items and the lowest similarity (cosine 0..1) to take, replacing
    /// the defaults layer by layer: `{"instance": {"limit": 15, "min_score": 0.45},
    /// "entities": {"limit": 10}, "shared": {"limit": 10, "min_score": 0.5}, "summary":
    /// {"limit": 1}, "tool_results": {"limit": 5}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<Value>,
    /// How passages are ranked: `hybrid` (default), `keyword` or `dense`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::index::SearchMode>,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The `cursor` of the previous answer, to continue it (repeat the other arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Arguments of `end_workflow`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndArgs {
    /// The workflow to end.
    pub workflow: String,
    /// Keep its conversation summaries (everything else is deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_summary: Option<bool>,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// A library error worded for the model: what the caller sent is `Invalid`, the rest broke
/// on the server's side.
fn tool_error(e: crate::Error) -> ToolError {
    match e {
        crate::Error::Request(m) => ToolError::Invalid(m),
        crate::Error::Scope(m) => ToolError::Invalid(format!("invalid workflow: {m}")),
        other => ToolError::Internal(other),
    }
}

fn finish(budget: Budget, m: &Map<String, Value>, full: FullResult) -> Result<Finished, ToolError> {
    Ok(Finished {
        text: budget.finish(m)?,
        full,
    })
}

/// The same answer for a handle this workflow does not hold, whoever else holds one.
fn no_such_handle(handle: &str) -> ToolError {
    let shown: String = handle.chars().take(64).collect();
    ToolError::Invalid(format!(
        "no such handle in this workflow: {shown:?}. Handles come from store_tool_result \
         (or a gather_context item) of the same workflow."
    ))
}

/// The fields of a store answer that say what was stored (no preview yet).
fn stored_fields(meta: &ResultMeta) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("handle".into(), json!(meta.handle));
    m.insert("tool".into(), json!(meta.tool));
    m.insert("format".into(), json!(meta.format));
    m.insert("raw_chars".into(), json!(meta.raw_chars));
    m.insert("raw_bytes".into(), json!(meta.raw_bytes));
    m.insert(
        "hash".into(),
        json!(meta.hash.get(..16).unwrap_or_default()),
    );
    m.insert("chunks".into(), json!(meta.chunks));
    m
}

/// `m` with a preview of `content` (`chars` long) cut to `keep` chars.
fn with_preview(
    m: &Map<String, Value>,
    content: &str,
    chars: usize,
    keep: usize,
) -> Map<String, Value> {
    let piece = budget::cut_str(content, chars, keep);
    let mut t = m.clone();
    let omitted = piece.omitted.map_or(0, |(a, b)| b - a);
    t.insert("preview".into(), json!(piece.text));
    t.insert("omitted_chars".into(), json!(omitted));
    if omitted > 0 {
        t.insert(
            "recall".into(),
            json!("recall_tool_result with this handle reads the whole result, page by page"),
        );
    }
    t
}

pub(crate) fn store_tool_result(
    ing: &Ingestor,
    scope: &Scope,
    a: &StoreResultArgs,
    budget: Budget,
    stop: &AtomicBool,
) -> Result<Finished, ToolError> {
    let max = ing.config().workflow.max_result_bytes;
    let (content, json) = a.content.stored_text(max).map_err(ToolError::Invalid)?;
    let args = match &a.args {
        None => Value::Null,
        Some(raw) => {
            let compact =
                compact_json(raw.0.get(), crate::workflow::MAX_ARGS_BYTES).ok_or_else(|| {
                    ToolError::Invalid(format!(
                        "args are over {} bytes of JSON; at most that many are recorded",
                        crate::workflow::MAX_ARGS_BYTES
                    ))
                })?;
            crate::bounded_json::parse(compact.as_bytes()).map_err(ToolError::Invalid)?
        }
    };
    let chars = content.chars().count();
    // The answer must fit before anything is stored: a caller that cannot be told the handle
    // must not pay for what it stored.
    let largest = ResultMeta {
        handle: format!("tr_{}", u64::MAX),
        tool: a.tool.trim().to_string(),
        args: Value::Null,
        raw_bytes: content.len() as u64,
        raw_chars: chars as u64,
        hash: "0".repeat(64),
        format: if json { "json" } else { "text" }.into(),
        stored_at: 0,
        chunks: u32::MAX,
        not_indexed: None,
    };
    if !budget.fits(&with_preview(&stored_fields(&largest), &content, chars, 0)) {
        return Err(budget.too_small());
    }
    let result = crate::workflow::ToolResult {
        tool: &a.tool,
        args: &args,
        content: &content,
        json,
        extract_entities: a.extract_entities.unwrap_or(false),
    };
    let stored = ing
        .workflows()
        .store_tool_result_until(scope, &a.workflow, &result, stop)
        .map_err(tool_error)?;
    let meta = &stored.meta;
    let mut m = stored_fields(meta);
    if let Some(why) = &meta.not_indexed {
        // Said as far as it fits: the handle must go out whatever the reason's length.
        let why: Vec<char> = why.chars().collect();
        let with_why = |k: usize| {
            let mut t = with_preview(&m, &content, chars, 0);
            t.insert(
                "not_indexed".into(),
                json!(budget::cut(&why, 0, why.len(), k).text),
            );
            t
        };
        if let Some(k) = budget::largest_fitting(0, why.len(), |k| budget.fits(&with_why(k))) {
            m.insert(
                "not_indexed".into(),
                json!(budget::cut(&why, 0, why.len(), k).text),
            );
        }
    }
    if a.extract_entities == Some(true) {
        let mut t = m.clone();
        t.insert("entities_found".into(), json!(stored.entities.len()));
        if budget.fits(&with_preview(&t, &content, chars, 0)) {
            m = t;
        }
        // As many keys as leave room for a useful preview; the rest are in gather_context.
        let keys = &stored.entities;
        let with_keys = |n: usize| {
            let mut t = m.clone();
            t.insert("entities".into(), json!(keys.get(..n).unwrap_or_default()));
            t.insert("preview".into(), json!("x".repeat(160)));
            t
        };
        let n = budget::largest_fitting(0, keys.len(), |n| budget.fits(&with_keys(n))).unwrap_or(0);
        if n > 0 {
            m.insert("entities".into(), json!(keys.get(..n).unwrap_or_default()));
        }
    }
    let with = |keep: usize| with_preview(&m, &content, chars, keep);
    // Never more than the budget's length of preview: the search stays short on any result.
    let keep = budget::largest_fitting(0, chars.min(budget.max), |k| budget.fits(&with(k)))
        .ok_or_else(|| budget.too_small())?;
    finish(budget, &with(keep), FullResult::of([content.as_str()]))
}

pub(crate) fn recall_tool_result(
    ing: &Ingestor,
    scope: &Scope,
    a: &RecallArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let digest = cursor::digest(a);
    let start = cursor::start(a.cursor.as_deref(), "recall", &digest)?;
    let Some((meta, text)) = ing
        .workflows()
        .recall(scope, &a.workflow, &a.handle)
        .map_err(tool_error)?
    else {
        return Err(no_such_handle(&a.handle));
    };
    // The selection, as char offsets: every line, or lines `first..=last`.
    let total = usize::try_from(meta.raw_chars).unwrap_or(usize::MAX);
    let (sel_from, sel_to) = match a.lines.as_deref() {
        None => (0, total),
        Some(r) => {
            let (first, last) = super::parse_range("lines", r)?;
            line_span(&text, first, last)
        }
    };
    let from = start.from.clamp(sel_from, sel_to);
    // Where `from` is in bytes: the cursor carries it (checked: a char boundary at that
    // char offset is what the cursor that named it found), else one walk to it.
    let from_byte = match a.cursor.as_deref().filter(|c| !c.trim().is_empty()) {
        Some(_) if text.is_char_boundary(start.item) && start.item <= text.len() => start.item,
        Some(_) => {
            return Err(ToolError::Invalid(
                "this cursor does not belong to this result: repeat the arguments of the call that returned it".into(),
            ))
        }
        None => text.char_indices().nth(from).map_or(text.len(), |(b, _)| b),
    };
    let rest = text.get(from_byte..).unwrap_or_default();
    // A piece of n chars never fits a budget of fewer than n bytes: look at most that far.
    let span = (sel_to - from).min(budget.max);
    let ends: Vec<usize> = rest
        .char_indices()
        .map(|(b, _)| b)
        .skip(1)
        .chain(std::iter::once(rest.len()))
        .take(span)
        .collect();
    let byte_end = |n: usize| {
        if n == 0 {
            0
        } else {
            ends.get(n - 1).copied().unwrap_or(0)
        }
    };
    let with = |n: usize| {
        let end = from + n;
        let piece = rest.get(..byte_end(n)).unwrap_or_default();
        let mut m = Map::new();
        m.insert("handle".into(), json!(meta.handle));
        m.insert("tool".into(), json!(meta.tool));
        m.insert("format".into(), json!(meta.format));
        m.insert("raw_chars".into(), json!(meta.raw_chars));
        if a.lines.is_some() {
            m.insert("selection".into(), json!([sel_from, sel_to]));
        }
        m.insert("offset".into(), json!(from));
        m.insert("end".into(), json!(end));
        m.insert("text".into(), json!(piece));
        if end < sel_to {
            m.insert(
                "more".into(),
                json!(format!(
                    "{} chars more: call again with the cursor",
                    sel_to - end
                )),
            );
            let p = cursor::Position {
                item: from_byte + byte_end(n),
                from: end,
                to: None,
            };
            m.insert("cursor".into(), json!(cursor::encode("recall", &digest, p)));
        }
        m
    };
    let n = budget::largest_fitting(0, ends.len(), |n| budget.fits(&with(n)))
        .ok_or_else(|| budget.too_small())?;
    if n == 0 && sel_to > from {
        return Err(budget.too_small());
    }
    let shown = rest.get(..byte_end(n)).unwrap_or_default();
    finish(budget, &with(n), FullResult::of([shown]))
}

/// The char range of 1-based lines `first..=last` of `text` (each with its line break; a
/// range past the end is cut at the end).
fn line_span(text: &str, first: u64, last: u64) -> (usize, usize) {
    let mut line = 1u64;
    let (mut from, mut to) = (None, None);
    let mut count = 0usize;
    for (i, ch) in text.chars().enumerate() {
        if line == first && from.is_none() {
            from = Some(i);
        }
        if ch == '\n' {
            if line == last {
                to = Some(i + 1);
                break;
            }
            line += 1;
        }
        count = i + 1;
    }
    let end = to.unwrap_or(count.max(from.unwrap_or(0)));
    let total = text.chars().count();
    (from.unwrap_or(total).min(end), end.min(total))
}

pub(crate) fn remember(
    ing: &Ingestor,
    scope: &Scope,
    a: &RememberArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let created = ing
        .workflows()
        .remember(scope, &a.workflow, &a.key, &a.value, a.source.as_deref())
        .map_err(tool_error)?;
    let mut m = Map::new();
    m.insert("key".into(), json!(a.key.trim()));
    m.insert("created".into(), json!(created));
    finish(budget, &m, FullResult::of([a.value.as_str()]))
}

pub(crate) fn store_summary(
    ing: &Ingestor,
    scope: &Scope,
    a: &SummaryArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let id = ing
        .workflows()
        .store_summary(scope, &a.workflow, &a.text, a.covers.as_deref())
        .map_err(tool_error)?;
    let mut m = Map::new();
    m.insert("summary".into(), json!(id));
    m.insert("chars".into(), json!(a.text.chars().count()));
    finish(budget, &m, FullResult::of([a.text.as_str()]))
}

pub(crate) fn end_workflow(
    ing: &Ingestor,
    scope: &Scope,
    a: &EndArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let ended = ing
        .workflows()
        .end(scope, &a.workflow, a.keep_summary.unwrap_or(false))
        .map_err(tool_error)?;
    let mut m = Map::new();
    m.insert("workflow".into(), json!(a.workflow.trim()));
    m.insert("ended".into(), json!(true));
    m.insert(
        "deleted".into(),
        json!({"tool_results": ended.results, "entities": ended.entities, "summaries": ended.summaries}),
    );
    if ended.summaries_kept > 0 {
        m.insert("summaries_kept".into(), json!(ended.summaries_kept));
    }
    finish(budget, &m, FullResult::default())
}

/// The layers of a call: the configured defaults, each layer the call names replaced.
fn layers_of(ing: &Ingestor, given: Option<&Value>) -> Result<ContextLayers, ToolError> {
    let defaults = ing.config().workflow.context;
    let Some(given) = given else {
        return Ok(defaults);
    };
    let mut merged =
        serde_json::to_value(defaults).map_err(|e| ToolError::Invalid(e.to_string()))?;
    let (Some(m), Some(g)) = (merged.as_object_mut(), given.as_object()) else {
        return Err(ToolError::Invalid(
            "layers must be an object such as {\"shared\": {\"limit\": 3}}".into(),
        ));
    };
    // Field by field: `{"shared": {"limit": 3}}` keeps the shared layer's floor.
    for (k, v) in g {
        match (m.get_mut(k), v) {
            (Some(Value::Object(layer)), Value::Object(fields)) => {
                for (f, x) in fields {
                    layer.insert(f.clone(), x.clone());
                }
            }
            _ => {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    let layers: ContextLayers =
        serde_json::from_value(merged).map_err(|e| ToolError::Invalid(format!("layers: {e}")))?;
    layers.validate().map_err(ToolError::Invalid)?;
    Ok(layers)
}

/// An item as the answer shows it, its text cut to `keep` chars when given.
fn item_value(item: &ContextItem, reader: &Scope, keep: Option<usize>) -> Value {
    let mut m = Map::new();
    let layer = serde_json::to_value(item.layer()).unwrap_or_default();
    m.insert("layer".into(), layer);
    let text = match item {
        ContextItem::Passage { hit, .. } => {
            m.insert("locator".into(), json!(hit.locator));
            super::view::note_owner(&mut m, reader, &hit.owner, &[]);
            m.insert("score".into(), json!(super::search::rounded(hit.score)));
            if let Some(s) = &hit.section {
                m.insert("section".into(), json!(s));
            }
            Some(hit.text.as_str())
        }
        ContextItem::Entity { entity, .. } => {
            m.insert("key".into(), json!(entity.key));
            let chars: Vec<char> = entity.value.chars().collect();
            let piece = budget::cut(&chars, 0, chars.len(), keep.unwrap_or(chars.len()));
            m.insert("value".into(), json!(piece.text));
            if let Some(s) = &entity.source {
                m.insert("source".into(), json!(s));
            }
            if let Some((a, b)) = piece.omitted {
                m.insert("omitted_chars".into(), json!(b - a));
            }
            None
        }
        ContextItem::Summary(s) => {
            m.insert("summary".into(), json!(s.id));
            if let Some(c) = &s.covers {
                // What it covers is a label: never more of it than a cut text would show.
                let chars: Vec<char> = c.chars().collect();
                let shown = keep.unwrap_or(MAX_COVERS_SHOWN).min(MAX_COVERS_SHOWN);
                m.insert(
                    "covers".into(),
                    json!(budget::cut(&chars, 0, chars.len(), shown).text),
                );
            }
            Some(s.text.as_str())
        }
        ContextItem::ToolResult { meta, hit } => {
            m.insert("handle".into(), json!(meta.handle));
            m.insert("tool".into(), json!(meta.tool));
            m.insert("locator".into(), json!(hit.locator));
            m.insert("score".into(), json!(super::search::rounded(hit.score)));
            Some(hit.text.as_str())
        }
    };
    if let Some(text) = text {
        let chars: Vec<char> = text.chars().collect();
        let piece = budget::cut(&chars, 0, chars.len(), keep.unwrap_or(chars.len()));
        m.insert("text".into(), json!(piece.text));
        if let Some((a, b)) = piece.omitted {
            m.insert("omitted_chars".into(), json!(b - a));
            m.insert("read_more".into(), json!(how_to_read(item)));
        }
    }
    Value::Object(m)
}

/// How to get the whole of an item.
fn how_to_read(item: &ContextItem) -> &'static str {
    match item {
        ContextItem::ToolResult { .. } => "recall_tool_result with this handle",
        ContextItem::Summary(_) => "gather_context with a larger max_chars",
        _ => "read_content_objects with this locator (the fragment's pages or lines as filters)",
    }
}

/// A left-out item, as short as it can name it.
fn reference(item: &ContextItem) -> Value {
    let layer = serde_json::to_value(item.layer()).unwrap_or_default();
    match item {
        ContextItem::Passage { hit, .. } => json!({"layer": layer, "locator": hit.locator}),
        ContextItem::Entity { entity, .. } => json!({"layer": layer, "key": entity.key}),
        ContextItem::Summary(s) => json!({"layer": layer, "summary": s.id}),
        ContextItem::ToolResult { meta, .. } => json!({"layer": layer, "handle": meta.handle}),
    }
}

/// Each layer's share of a page, in the order the layers come: how many of its items are
/// shown and the characters they take, and how many are left for later pages. `shown[i]` is
/// `items[start + i]`.
fn layer_shares(items: &[ContextItem], start: usize, next: usize, shown: &[Value]) -> Value {
    let mut shares: Vec<(Value, usize, usize, usize)> = Vec::new();
    for (i, item) in items.iter().enumerate().skip(start) {
        let layer = serde_json::to_value(item.layer()).unwrap_or_default();
        let at = match shares.iter().position(|(l, ..)| *l == layer) {
            Some(at) => at,
            None => {
                shares.push((layer, 0, 0, 0));
                shares.len() - 1
            }
        };
        let Some(share) = shares.get_mut(at) else {
            continue;
        };
        match shown.get(i - start).filter(|_| i < next) {
            Some(v) => {
                share.1 += 1;
                share.2 += v.to_string().chars().count();
            }
            None => share.3 += 1,
        }
    }
    json!(shares
        .into_iter()
        .map(|(layer, n, chars, left)| json!({"layer": layer, "shown": n, "chars": chars, "left": left}))
        .collect::<Vec<_>>())
}

/// The smallest budget whose answers state each layer's share (`layers`).
const MIN_SHARES_BUDGET: usize = 1000;

/// The most of a summary's `covers` an answer shows (it may be up to 4 KiB).
const MAX_COVERS_SHOWN: usize = 160;

/// The smallest cut text worth showing rather than leaving the item out.
const MIN_CUT_CHARS: usize = 120;

pub(crate) fn gather_context(
    ing: &Ingestor,
    scope: &Scope,
    a: &GatherArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let digest = cursor::digest(a);
    let start = cursor::start(a.cursor.as_deref(), "gather", &digest)?;
    let layers = layers_of(ing, a.layers.as_ref())?;
    let items = ing
        .workflows()
        .gather(
            scope,
            &a.workflow,
            &a.query,
            &layers,
            a.mode.unwrap_or_default(),
        )
        .map_err(tool_error)?;
    let reader = Scope {
        workflow_id: None,
        ..scope.clone()
    };
    // Each layer's share of the page is stated in it, within the budget, from
    // [`MIN_SHARES_BUDGET`] chars on (below, the items need every char).
    let states_shares = budget.max >= MIN_SHARES_BUDGET;
    let texts: Vec<String> = items.iter().map(ContextItem::text).collect();
    let full = FullResult::of(texts.iter().map(String::as_str));
    let rest = items.get(start.item..).unwrap_or_default();
    let base = |shown: &[Value], next: usize| {
        let mut m = Map::new();
        m.insert("workflow".into(), json!(a.workflow.trim()));
        m.insert("items".into(), json!(shown));
        if states_shares {
            m.insert(
                "layers".into(),
                layer_shares(&items, start.item, next, shown),
            );
        }
        let left = items.len().saturating_sub(next);
        if left > 0 {
            m.insert(
                "more".into(),
                json!(format!("{left} items left: call again with the cursor")),
            );
            m.insert("left_out_count".into(), json!(left));
            let p = cursor::Position {
                item: next,
                from: 0,
                to: None,
            };
            m.insert("cursor".into(), json!(cursor::encode("gather", &digest, p)));
        }
        m
    };
    // Whole items in priority order while they fit.
    let mut shown: Vec<Value> = Vec::new();
    let mut next = start.item;
    for item in rest {
        let v = item_value(item, &reader, None);
        let mut trial = shown.clone();
        trial.push(v);
        if !budget.fits(&base(&trial, next + 1)) {
            break;
        }
        shown = trial;
        next += 1;
    }
    // The first that does not fit whole: cut, when enough of it fits.
    if let Some(item) = items.get(next) {
        let fits_cut = |k: usize| {
            let mut trial = shown.clone();
            trial.push(item_value(item, &reader, Some(k)));
            budget.fits(&base(&trial, next + 1))
        };
        // A page shows at least one item, cut as short as need be: every page makes progress.
        let least = if shown.is_empty() { 0 } else { MIN_CUT_CHARS };
        if let Some(k) = budget::largest_fitting(least, 1 << 20, fits_cut) {
            shown.push(item_value(item, &reader, Some(k)));
            next += 1;
        }
    }
    if shown.is_empty() && next < items.len() {
        return Err(budget.too_small());
    }
    let mut m = base(&shown, next);
    // Name as many of the rest as fit.
    let mut named: Vec<Value> = Vec::new();
    for item in items.get(next..).unwrap_or_default() {
        let mut trial = m.clone();
        let mut t = named.clone();
        t.push(reference(item));
        trial.insert("left_out".into(), json!(t));
        if !budget.fits(&trial) {
            break;
        }
        named = t;
    }
    if !named.is_empty() {
        m.insert("left_out".into(), json!(named));
    }
    if items.is_empty() {
        m.insert(
            "note".into(),
            json!("nothing in any layer matched this query"),
        );
    }
    finish(budget, &m, full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_spans_are_exact() {
        let t = "one\ntwo\nthree\n";
        let span = |a, b| {
            let (f, e) = line_span(t, a, b);
            t.chars().skip(f).take(e - f).collect::<String>()
        };
        assert_eq!(span(1, 1), "one\n");
        assert_eq!(span(2, 3), "two\nthree\n");
        assert_eq!(span(3, 9), "three\n");
        assert_eq!(span(5, 6), "");
        let no_end = "a\nb";
        let (f, e) = line_span(no_end, 2, 2);
        assert_eq!((f, e), (2, 3));
    }
}
