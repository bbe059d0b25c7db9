//! The agent's tools: pure request → answer functions over an [`Ingestor`], one module per
//! retrieval tool, and `workflow` for the workflow layer's six (store and recall tool
//! results, remember, store a summary, gather the context, end a workflow). The CLI (`ingest browse|read|extract|search`), the MCP server
//! (`ingest mcp`) and the daemon's socket are thin faces over [`call`]: they pass a
//! [`ToolCall`] and a [`Scope`] that comes from their configuration, never from the model,
//! and send the [`ToolAnswer`]'s text as it is.
//!
//! Every answer is one JSON object whose UTF-8 length never exceeds its budget
//! (`max_chars`, default [`DEFAULT_MAX_CHARS`], capped by [`Config::max_answer_chars`]).
//! What does not fit is never dropped silently: a cut text keeps its head and tail around a
//! `[N chars omitted]` marker, and the answer's `cursor` continues exactly where it stopped.
//! docs/TOOLS.md describes every answer's fields.
//!
//! [`Config::max_answer_chars`]: crate::Config::max_answer_chars

use std::sync::atomic::{AtomicBool, Ordering};

use extractors::Scope;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::ingestor::Ingestor;

/// The budget of an answer when the call does not give one, in chars (UTF-8 bytes).
pub const DEFAULT_MAX_CHARS: usize = 4000;

pub use crate::config::MIN_MAX_CHARS;
#[cfg(any(test, feature = "testing"))]
pub(crate) use quote::search_text as quote_search_text;
pub use quote::MAX_QUOTE_CHARS;

/// What a search answers when no candidate is tied to the query at all (none holds one of
/// its content words, none comes close to its meaning: [`crate::index::confidence`]).
pub const NOTHING_RELEVANT: &str = "nothing relevant: no passage holds a content word of the query or comes close to its meaning; the documents do not seem to cover it. Try other words";

/// What a search answers when no hit reaches the `min_score` the caller gave.
pub const NONE_REACH_MIN_SCORE: &str = "nothing reaches min_score: no passage is that relevant to the query. Try a lower min_score, or none (weak matches are then shown, marked confidence low)";

/// The note of an answer whose hits are all of low confidence.
pub const ONLY_WEAK: &str = "no confident match: these are the closest passages (confidence low), weakly tied to the query; read them before relying on them, or try other words";

/// The note a search answer carries, if any: nothing found ([`NOTHING_RELEVANT`], or
/// [`NONE_REACH_MIN_SCORE`] under a caller's `min_score`), or only weak hits ([`ONLY_WEAK`]).
pub fn search_note(hits: &[crate::Hit], min_score: Option<f32>) -> Option<&'static str> {
    if hits.is_empty() {
        return Some(match min_score {
            Some(_) => NONE_REACH_MIN_SCORE,
            None => NOTHING_RELEVANT,
        });
    }
    hits.iter()
        .all(|h| h.confidence == crate::index::Confidence::Low)
        .then_some(ONLY_WEAK)
}

/// Why a heavy tool call of `tool` is refused when its key runs as many as it may.
pub fn heavy_busy(tool: &str) -> String {
    format!(
        "{tool} is a heavy tool ({}): this key runs as many of them at once as it may \
         (max_heavy_per_key); call again when one ends",
        TOOLS
            .iter()
            .filter(|t| t.heavy)
            .map(|t| t.name)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Arguments of `search_documents`: one declaration for every face. MCP's schema and the
/// JSON of `ingest tool`, the daemon socket and `POST /v1/tools/search_documents` come from
/// serde and schemars; `POST /v1/search` takes the same fields (`face_http::search`); `ingest
/// search` takes them as the flags declared here (clap), the query as its words.
#[derive(
    Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema, clap::Args,
)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in plain words (a question or key terms).
    #[arg(skip)]
    pub query: String,
    /// The most hits to return (default 5, at most 50). Hits that do not fit `max_chars`
    /// come with a `cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(short = 'n', long, value_name = "N")]
    pub limit: Option<usize>,
    /// Leave out hits whose relevance (each hit's `relevance`: the cosine similarity of
    /// meaning, 0..1, or the words' BM25 score / 80 when higher) is below this. Default:
    /// none — every hit tied to the query is shown, each with its `confidence` (`low`: a
    /// weak match, read it before relying on it), and "nothing relevant" only when no
    /// passage holds a content word of the query or comes close to its meaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub min_score: Option<f32>,
    /// How hits are ranked: `hybrid` (default: meaning and exact words fused; best for most
    /// questions), `keyword` (exact words, names, codes, file and section names; loads no
    /// model) or `dense` (meaning only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(short, long, value_name = "MODE")]
    pub mode: Option<crate::index::SearchMode>,
    /// Search only under this locator: a folder, an archive (at any depth) or one file, as
    /// `browse_container` or an earlier hit shows it (no `#fragment`). On the command line
    /// also a path as typed (relative, ~/…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(short, long)]
    pub locator: Option<String>,
    /// Search only what was indexed from this source (a `name` from `list_sources`); with
    /// `locator`, that locator must lie inside the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "NAME")]
    pub source: Option<String>,
    /// Only this owner's files (an `owner` an earlier answer showed, e.g. "bob (shared)"):
    /// when two files you may read have the same locator (yours and one a colleague
    /// shared), or to search one colleague's shared files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub owner: Option<String>,
    /// Only objects of this type: `text`, `image`, `videostream`, `audiostream`, `other`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(short = 't', long = "type", value_name = "TYPE")]
    pub content_type: Option<String>,
    /// `card`: only file cards (one per file: its name, folder, type, title, author, outline,
    /// sheets; finds files by what they are, pictures and recordings too); `passage`: only
    /// text from inside files. Absent: both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(short, long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Only these 1-based physical pages: `"47"` or `"40-47"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(short, long)]
    pub pages: Option<String>,
    /// Only this section (and its subsections): a section id (`s12`) from the outline that
    /// `browse_container` shows for the file given as `locator`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(short, long)]
    pub section: Option<String>,
    /// Only this spreadsheet sheet (by name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub sheet: Option<String>,
    /// Only this 1-based slide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub slide: Option<u32>,
    /// `true`: only files shared with the whole mandate (colleagues' and your own shared
    /// uploads); `false`: only files that are not shared (your own). Absent: both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "BOOL")]
    pub shared: Option<bool>,
    /// Only files uploaded with these tags, every one of them: `{"team": "ops"}` (on the
    /// command line `team=ops,case=17`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "KEY=VALUE,…")]
    pub tags: Option<Tags>,
    /// Also give each hit's `boxes` on its page (opt-in): the lines holding the passage, as
    /// `[x0, y0, x1, y1]` in PDF points from the page's bottom-left corner (PDF and OCR text).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[arg(long)]
    pub positions: bool,
    /// Budget of the answer in chars (default 4000, at least 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "N")]
    pub max_chars: Option<usize>,
    /// The `cursor` of the previous answer, to continue it (repeat the other arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,
}

/// User tags a search asks for, each `key=value` on the file (`UploadOptions::tags`): JSON
/// `{"team": "ops"}`, on the command line `team=ops,case=17`. Checked by
/// [`crate::uploads::encode_tags`] where the filter is made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Tags(pub std::collections::BTreeMap<String, String>);

impl std::str::FromStr for Tags {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut tags = std::collections::BTreeMap::new();
        for pair in s.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("tag {pair:?} is not key=value"))?;
            if tags.len() >= crate::uploads::MAX_TAGS {
                return Err(format!("at most {} tags", crate::uploads::MAX_TAGS));
            }
            tags.insert(key.trim().to_string(), value.to_string());
        }
        Ok(Tags(tags))
    }
}

/// Arguments of `browse_container`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowseArgs {
    /// A folder, an archive (at any depth: `outer.zip!/inner.tar.gz`) or a file. Empty or
    /// absent: the top-level folders and files of this scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<String>,
    /// Only this owner's files (an `owner` an earlier answer showed): when two files you
    /// may read have the same locator (yours and one a colleague shared). Without it a
    /// locator means your own file first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// For a document: expand this outline node (an id such as `s12` from an earlier
    /// answer) to show the entries under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The `cursor` of the previous answer, to continue it (repeat the other arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Arguments of `read_content_objects`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The file to read; a search hit's locator with its `#fragment` (`#page=12`,
    /// `#sheet=Q3&rows=157-158`, `#line=40-52`, `#para=3-4`, `#slide=2`) reads exactly that
    /// place — only those rows, lines or paragraphs, with a table's header row — where no
    /// filter below says otherwise.
    pub locator: String,
    /// Whose file, when two files you may read have the same locator (yours and one a
    /// colleague shared): the `owner` an earlier answer showed. Without it a locator means
    /// your own file first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Only these 1-based physical pages: `"47"` or `"40-47"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<String>,
    /// Only this section and its subsections: an id (`s12`) from `browse_container`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Only objects of this type: `text`, `image`, `videostream`, `audiostream`, `other`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Only this spreadsheet sheet (by name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// With `sheet` or for CSV: only objects overlapping these 1-based rows, `"1-50"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<String>,
    /// Only this 1-based slide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slide: Option<u32>,
    /// Read around this place instead: a search hit's locator (`report.pdf#page=12`,
    /// `notes.md#line=40-52`) or its fragment alone. The answer is the object holding it
    /// (`hit: true`) with `before` objects ahead of it and `after` behind it, in document
    /// order (the other filters still apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub around: Option<String>,
    /// With `around`: how much to read before the hit (default 2; at most 100 objects or
    /// 100 000 chars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<usize>,
    /// With `around`: how much to read after the hit (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<usize>,
    /// With `around`: what `before` and `after` count, `objects` (the default) or `chars`
    /// (whole objects until that many chars of text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Also give each object's `positions` (opt-in: ~50 chars a line): the page's size and
    /// each line's box `[x0, y0, x1, y1]` with its char offsets in the text (PDF points from
    /// the page's bottom-left corner; pixels from a picture's top-left), a picture's box on
    /// its page. A box is what `render_page` takes as `region`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub positions: bool,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The `cursor` of the previous answer, to continue it (repeat the other arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Arguments of `verify_quote`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuoteArgs {
    /// The file the quote is said to come from (no `#fragment`).
    pub locator: String,
    /// The quoted words as they are to be cited (at most 4000 chars). White space, line
    /// breaks, hyphens, ligatures, typographic quotes and case need not match.
    pub quote: String,
    /// Whose file, when two files you may read have the same locator (yours and one a
    /// colleague shared): the `owner` an earlier answer showed. Without it a locator means
    /// your own file first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// Arguments of `render_page`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenderArgs {
    /// A PDF or a picture; a PDF page may be named by its fragment (`report.pdf#page=12`,
    /// as search hits give it).
    pub locator: String,
    /// The 1-based page of a PDF (default: the locator's `#page=`, else 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Resolution to render a PDF page at, dots per inch (default 100, at most 600); lowered
    /// when the image would not fit `max_bytes` (the answer says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpi: Option<u32>,
    /// Only this part: `[x0, y0, x1, y1]`, a box as `positions` and `verify_quote` give it
    /// (PDF points from the page's bottom-left corner; a picture's pixels from its top-left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<[f64; 4]>,
    /// The image's largest size in bytes (default 1000000, from 1000 to 8000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// Whose file, when two files you may read have the same locator: the `owner` an earlier
    /// answer showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Budget of the answer's text in chars (default 4000); the image is counted apart, by
    /// `max_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// Arguments of `read_section`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionArgs {
    /// The file (no `#fragment`).
    pub locator: String,
    /// Whose file, when two files you may read have the same locator (yours and one a
    /// colleague shared): the `owner` an earlier answer showed. Without it a locator means
    /// your own file first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The section's id (`s12`) from `browse_container`'s outline of that file.
    pub section: String,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The `cursor` of the previous answer, to continue it (repeat the other arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Arguments of `extract_container_item`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractArgs {
    /// The member to extract and index now: `archive.zip!/path/in/archive.pdf` (also one
    /// that was skipped by a limit or not listed).
    pub locator: String,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The `cursor` of the previous answer, to continue it (repeat the other arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Arguments of `list_sources`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSourcesArgs {
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The `cursor` of the previous answer, to continue it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Arguments of `browse_source`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowseSourceArgs {
    /// The source's `name` from `list_sources`.
    pub source: String,
    /// A folder below the source's root (`reports/2026`); empty or absent: its root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The `cursor` of the previous answer, to continue it (repeat the other arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Arguments of `pull_source`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PullSourceArgs {
    /// The source's `name` from `list_sources`.
    pub source: String,
    /// A file or folder below the source's root, as `browse_source` shows it; empty or
    /// absent: the whole source (at most 1000 objects per pull).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Budget of the answer in chars (default 4000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

impl ToolCall {
    /// The longest answer the call accepts: `max_chars` (default [`DEFAULT_MAX_CHARS`]),
    /// at most `ceiling`. A `max_chars` under [`MIN_MAX_CHARS`] is refused with an error
    /// saying so, which may take up to [`MIN_MAX_CHARS`] chars: an answer that cannot say
    /// what is wrong helps nobody.
    pub fn budget(&self, ceiling: usize) -> usize {
        self.max_chars()
            .unwrap_or(DEFAULT_MAX_CHARS)
            .min(ceiling)
            .max(MIN_MAX_CHARS)
    }

    /// The call of tool `name` with `json` (a JSON object's text; empty: no arguments),
    /// parsed within a bound on memory ([`crate::bounded_json`]): a stored tool result's
    /// content is taken as its raw text, every other call's arguments are counted before they
    /// become values. What HTTP and the daemon's socket receive.
    pub fn from_json(name: &str, json: &[u8]) -> Result<ToolCall, String> {
        let json: &[u8] = if json.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            json
        };
        if name == "store_tool_result" {
            return serde_json::from_slice(json)
                .map(ToolCall::StoreToolResult)
                .map_err(|e| format!("invalid arguments for {name}: {e}"));
        }
        let args = crate::bounded_json::parse(json)
            .map_err(|e| format!("invalid arguments for {name}: {e}"))?;
        Self::parse(name, args)
    }
}

/// A tool's answer: the exact text to send (one JSON object, within its budget), and whether
/// it is an error the model should read (`{"error": "..."}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAnswer {
    /// The answer as sent: a JSON object, at most `max_chars` UTF-8 bytes.
    pub text: String,
    /// Whether the answer is `{"error": …}`.
    pub is_error: bool,
    /// An image beside the text (`render_page`), within the call's own byte budget: MCP
    /// sends it as image content, HTTP and `ingest tool` as the answer's `image` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ToolImage>,
}

/// An image a tool answers with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolImage {
    /// `image/png`.
    pub mime_type: String,
    /// The image's bytes in base64 (standard alphabet, padded).
    pub base64: String,
}

impl ToolAnswer {
    /// The answer as one JSON object: the text's object, with the image (if any) as its
    /// `image` field (`{"mime_type", "base64"}`): what HTTP and `ingest tool` print.
    pub fn to_json_text(&self) -> String {
        match (&self.image, serde_json::from_str::<Value>(&self.text)) {
            (Some(image), Ok(Value::Object(mut m))) => {
                m.insert("image".into(), json!(image));
                Value::Object(m).to_string()
            }
            _ => self.text.clone(),
        }
    }
}

/// Why a call could not be answered, worded for the model.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// Not in this scope, or not there at all: both read the same.
    #[error("no such locator in this scope: {0}. Call browse_container without a locator to see what this scope holds.")]
    NotFound(String),
    /// Arguments that cannot be acted on.
    #[error("{0}")]
    Invalid(String),
    /// Not even the smallest answer fits this budget.
    #[error("max_chars {0} is too small for this answer; ask for more")]
    TooSmall(usize),
    /// Something broke on the server's side.
    #[error("the server could not answer: {0}")]
    Internal(#[from] crate::Error),
}

/// Run one tool call in `scope`. Never panics and never fails: errors come back as a
/// [`ToolAnswer`] with `is_error`, within the budget, worded for the model.
pub fn call(ingestor: &Ingestor, scope: &Scope, call: &ToolCall) -> ToolAnswer {
    call_until(ingestor, scope, call, &AtomicBool::new(false))
}

/// [`call`] for a caller that may go away: once `stop` is set, work that can still be left
/// undone is (a call not started yet answers at once; a tool result is stored but not
/// indexed; an archive member is not extracted).
pub fn call_until(
    ingestor: &Ingestor,
    scope: &Scope,
    call: &ToolCall,
    stop: &AtomicBool,
) -> ToolAnswer {
    let ceiling = ingestor.config().max_answer_chars;
    if let Err(e) = crate::access::check_scope(scope) {
        return error_answer(&format!("invalid scope: {e}"), call.budget(ceiling));
    }
    // A face passes its caller's scope; a workflow is named by the workflow tools' argument.
    if scope.workflow_id.is_some() {
        return error_answer(
            "invalid scope: it names a workflow; name it with the workflow tools' `workflow` argument instead",
            call.budget(ceiling),
        );
    }
    crate::failpoint::hit("tool.run");
    if stop.load(Ordering::SeqCst) {
        return error_answer(
            "the caller went away before the call ran",
            call.budget(ceiling),
        );
    }
    let started = std::time::Instant::now();
    let mut image = None;
    let result = Budget::of(call.max_chars(), ceiling).and_then(|budget| {
        let answer = match call {
            ToolCall::SearchDocuments(a) => search::search_documents(ingestor, scope, a, budget),
            ToolCall::BrowseContainer(a) => browse::browse_container(ingestor, scope, a, budget),
            ToolCall::ReadContentObjects(a) => {
                read::read_content_objects(ingestor, scope, a, budget)
            }
            ToolCall::ReadSection(a) => section::read_section(ingestor, scope, a, budget),
            ToolCall::VerifyQuote(a) => quote::verify_quote(ingestor, scope, a, budget, stop),
            ToolCall::RenderPage(a) => {
                render::render_page(ingestor, scope, a, budget).map(|(f, rendered)| {
                    image = Some(rendered);
                    f
                })
            }
            ToolCall::ExtractContainerItem(a) => {
                extract::extract_container_item(ingestor, scope, a, budget, stop)
            }
            ToolCall::ListSources(a) => sources::list_sources(ingestor, scope, a, budget),
            ToolCall::BrowseSource(a) => sources::browse_source(ingestor, scope, a, budget),
            ToolCall::PullSource(a) => sources::pull_source(ingestor, scope, a, budget, stop),
            ToolCall::StoreToolResult(a) => {
                workflow::store_tool_result(ingestor, scope, a, budget, stop)
            }
            ToolCall::RecallToolResult(a) => {
                workflow::recall_tool_result(ingestor, scope, a, budget)
            }
            ToolCall::Remember(a) => workflow::remember(ingestor, scope, a, budget),
            ToolCall::StoreSummary(a) => workflow::store_summary(ingestor, scope, a, budget),
            ToolCall::GatherContext(a) => workflow::gather_context(ingestor, scope, a, budget),
            ToolCall::EndWorkflow(a) => workflow::end_workflow(ingestor, scope, a, budget),
        }?;
        Ok((answer, budget))
    });
    let answer = match result {
        Ok((Finished { text, full }, _)) => {
            tracing::info!(
                tool = call.name(),
                answer_chars = text.len(),
                full_chars = full.chars,
                full_hash = %full.hash,
                ms = started.elapsed().as_millis() as u64,
                "tool answered"
            );
            ToolAnswer {
                text,
                is_error: false,
                image,
            }
        }
        Err(e) => {
            if let ToolError::Internal(inner) = &e {
                tracing::warn!(tool = call.name(), "tool failed: {inner}");
            }
            error_answer(&e.to_string(), call.budget(ceiling))
        }
    };
    answer
}

/// Sets its flag when dropped: the future of a call whose client went away is dropped, and
/// the call's work ([`call_until`]) then leaves undone what it still can.
pub struct StopOnDrop(pub std::sync::Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A finished answer, and what the full result (everything the call selected, before the
/// budget) weighs, for the server's log.
pub(crate) struct Finished {
    pub text: String,
    pub full: FullResult,
}

/// The size and hash of a call's full result.
#[derive(Debug, Clone, Default)]
pub(crate) struct FullResult {
    pub chars: u64,
    pub hash: String,
}

impl FullResult {
    /// `chars` of full result named by what `hasher` was fed.
    pub(crate) fn new(chars: u64, hasher: &blake3::Hasher) -> FullResult {
        let hash = hasher.finalize().to_hex();
        FullResult {
            chars,
            hash: hash.as_str().get(..16).unwrap_or_default().to_string(),
        }
    }

    /// The full result made of `texts`.
    pub(crate) fn of<'a>(texts: impl IntoIterator<Item = &'a str>) -> FullResult {
        let mut h = blake3::Hasher::new();
        let mut chars = 0u64;
        for t in texts {
            h.update(t.as_bytes());
            h.update(&[0]);
            chars += t.len() as u64;
        }
        FullResult::new(chars, &h)
    }
}

/// A short hash naming an answer in logs (the first 16 hex digits of its blake3), so two log
/// lines can be matched to one answer without logging its text.
pub fn short_hash(text: &str) -> String {
    let hex = blake3::hash(text.as_bytes()).to_hex();
    hex.get(..16).unwrap_or_default().to_string()
}

/// `{"error": message}` within `max` chars: as much of the message as fits, a long one cut
/// in the middle with `[N chars omitted]`.
pub fn error_answer(message: &str, max: usize) -> ToolAnswer {
    let chars: Vec<char> = message.chars().collect();
    let make = |keep: usize| {
        let piece = budget::cut(&chars, 0, chars.len(), keep);
        serde_json::json!({ "error": piece.text }).to_string()
    };
    let text = match budget::largest_fitting(0, chars.len(), |k| make(k).len() <= max) {
        Some(k) => make(k),
        None => r#"{"error":"error"}"#.to_string(),
    };
    ToolAnswer {
        text,
        is_error: true,
        image: None,
    }
}

mod browse;
mod budget;
mod cursor;
pub mod daemon_client;
mod declared;
mod extract;
mod files;
mod host;
mod original;
mod paging;
mod quote;
mod read;
mod render;
mod search;
// For the HTTP face's `/v1/search` (whole chunks, the tool's arguments).
pub use search::{boxes_of, search_hits};
mod section;
mod snippet;
mod sources;
pub(crate) mod view;
mod workflow;

pub use declared::{is_heavy, spec, Effect, ToolCall, ToolSpec, TOOLS, TOOL_NAMES};
pub use files::{list_files, ListedFile};
pub use host::{AnsweredBy, ToolHost};
pub use read::parse_range;
pub use sources::PULL_MAX_OBJECTS;
pub use workflow::{
    EndArgs, GatherArgs, RawJson, RecallArgs, RememberArgs, StoreResultArgs, SummaryArgs,
};

/// Add `owner` (whose the file is) to an answer about a file stored in `owner`, when it is
/// not `reader`'s own.
pub fn note_owner(
    m: &mut serde_json::Map<String, serde_json::Value>,
    reader: &Scope,
    owner: &Scope,
) {
    view::note_owner(m, reader, owner, &[]);
}

use budget::Budget;
