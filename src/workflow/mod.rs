//! The workflow layer: what one agent run keeps while it runs — tool results stored whole and
//! read back by handle, the entities it found, the conversation summaries its host wrote —
//! and [`context`]: one budgeted search over the three layers of the knowledge store
//! (instance documents, shared documents, the workflow).
//!
//! **Scope.** A workflow is a scope of its own ([`Scope::in_workflow`]): the caller's user,
//! feature instance and mandate plus the workflow id, never shared. Everything stored in it is
//! indexed under that scope, so the one access rule (`crate::access`) keeps it from every
//! other workflow, user and mandate and out of every document search; its records are rows
//! keyed by the scope's key, so a handle is only ever looked up in the caller's own workflow
//! and another workflow's handle reads exactly like a made-up one.
//!
//! **What is stored**: a row per workflow and per item in `<data_dir>/workflows.sqlite`
//! ([`records`]: a tool result's metadata, an entity, a summary; a call writes its item's row,
//! never a whole record), and each tool result's raw text, compressed, in
//! `<data_dir>/workflows/<hash>/<hash>/results/<handle>.deflate` (folders named by hashes of
//! the scope keys, so no id is ever a path). Each item is also indexed as a small text file
//! of the workflow's scope (never unpacked as a container, whatever its bytes), so search,
//! the content index and deletion are the pipeline's own: `tool-results/<handle>.txt|.json`,
//! `entities/<hash of key>.txt`, `summaries/<id>.txt`.
//!
//! **Quotas.** A workflow holds at most [`WorkflowConfig::max_items`] items and
//! [`WorkflowConfig::max_workflow_bytes`] bytes, counting everything it keeps: tool results
//! with their arguments, entities, summaries.
//!
//! **Lifecycle.** [`Workflows::end`] deletes everything of a workflow (indexed files, points,
//! blobs, records), or everything but its summaries; a workflow untouched for
//! [`WorkflowConfig::ttl`] is ended by the next workflow call (at most one sweep a minute).

pub mod context;
pub mod entities;
mod records;
mod records_pg;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use extractors::Scope;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::lock;
use crate::pipeline::Input;
use crate::report::{now_secs, FileReport, FileStatus, IngestReport};
use crate::services::Services;
use records::{list_as, Item, Kind, RecordStore, WorkflowStore};

pub use crate::config::{
    ContextLayers, LayerLimit, WorkflowConfig, MAX_LAYER_LIMIT, MAX_RESULT_BYTES_CEILING,
};
pub use context::ContextItem;

/// The folder (a locator's first segment) tool results are indexed under.
pub const RESULTS_FOLDER: &str = "tool-results";
/// The folder entities are indexed under.
pub const ENTITIES_FOLDER: &str = "entities";
/// The folder summaries are indexed under.
pub const SUMMARIES_FOLDER: &str = "summaries";

/// The longest entity key, in bytes.
pub const MAX_KEY_BYTES: usize = 256;
/// The longest entity value or source, in bytes.
pub const MAX_VALUE_BYTES: usize = 4096;
/// The longest tool name, in bytes.
pub const MAX_TOOL_NAME_BYTES: usize = 128;
/// The longest recorded tool arguments (JSON), in bytes.
pub const MAX_ARGS_BYTES: usize = 16 * 1024;
/// The longest summary, in bytes.
pub const MAX_SUMMARY_BYTES: usize = 256 * 1024;
/// How often workflow calls look for workflows past their time to live.
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// Workflows one sweep ends at most (the next sweep ends more).
const SWEEP_BATCH: usize = 100;

/// The metadata of one stored tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultMeta {
    /// What names it in this workflow (`tr_3`).
    pub handle: String,
    /// The tool that produced it.
    pub tool: String,
    /// The arguments it was called with (JSON, as the host gave them).
    #[serde(default)]
    pub args: Value,
    /// Its size in bytes (UTF-8) and in chars.
    pub raw_bytes: u64,
    /// Its size in chars.
    pub raw_chars: u64,
    /// blake3 of its bytes, hex.
    pub hash: String,
    /// `json` when the result is a JSON value, else `text`.
    pub format: String,
    /// When it was stored (seconds since the Unix epoch).
    pub stored_at: u64,
    /// The chunks it has in the index (0 when it could not be indexed).
    pub chunks: u32,
    /// Why it is not searchable, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_indexed: Option<String>,
}

impl ResultMeta {
    /// The name it is indexed under in the workflow's scope.
    pub fn indexed_name(&self) -> String {
        let ext = if self.format == "json" { "json" } else { "txt" };
        format!("{RESULTS_FOLDER}/{}.{ext}", self.handle)
    }
}

/// One remembered entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// What it is called (unique in the workflow: remembering a key again replaces it).
    pub key: String,
    /// Its value.
    pub value: String,
    /// Where it came from (a handle, a locator, a turn), if the caller said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// When it was last set.
    pub updated_at: u64,
}

impl Entity {
    /// The name it is indexed under: a hash of its key (keys are free text).
    pub fn indexed_name(&self) -> String {
        entity_name(&self.key)
    }

    /// The text that is indexed and shown.
    fn text(&self) -> String {
        match &self.source {
            Some(s) => format!("{}: {}\n(source: {s})\n", self.key, self.value),
            None => format!("{}: {}\n", self.key, self.value),
        }
    }
}

fn entity_name(key: &str) -> String {
    let hash = blake3::hash(key.as_bytes()).to_hex();
    format!(
        "{ENTITIES_FOLDER}/e_{}.txt",
        hash.as_str().get(..20).unwrap_or_default()
    )
}

/// One stored conversation summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// What names it (`s_2`).
    pub id: String,
    /// The summary as the host's model wrote it.
    pub text: String,
    /// What it covers (e.g. `rounds 1-12`), if the host said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covers: Option<String>,
    /// When it was stored.
    pub stored_at: u64,
}

impl Summary {
    /// The name it is indexed under.
    pub fn indexed_name(&self) -> String {
        format!("{SUMMARIES_FOLDER}/{}.txt", self.id)
    }
}

/// A workflow's record as the earlier layout kept it (`<folder>/record.json`): read once, to
/// move it into the database ([`records`]).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct LegacyRecord {
    pub scope: Scope,
    #[allow(dead_code)]
    pub created_at: u64,
    pub results: Vec<ResultMeta>,
    pub entities: BTreeMap<String, Entity>,
    pub summaries: Vec<Summary>,
}

/// A tool result to store.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult<'a> {
    /// The tool that produced it.
    pub tool: &'a str,
    /// The arguments it was called with (JSON; `Null` when not given).
    pub args: &'a Value,
    /// The result: text, or JSON when `json`.
    pub content: &'a str,
    /// Whether `content` is a JSON value.
    pub json: bool,
    /// Remember the entities the rules find in it.
    pub extract_entities: bool,
}

/// What storing a tool result did.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResult {
    /// Its metadata (the handle to recall it by among them).
    pub meta: ResultMeta,
    /// The entities found in it and remembered (keys), when asked for.
    pub entities: Vec<String>,
}

/// What ending a workflow deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Ended {
    /// Tool results deleted.
    pub results: usize,
    /// Entities deleted.
    pub entities: usize,
    /// Summaries deleted.
    pub summaries: usize,
    /// Summaries kept (`keep_summary`).
    pub summaries_kept: usize,
}

/// Counts over every workflow of the data directory (status and metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WorkflowStats {
    /// Workflows with a record.
    pub workflows: u64,
    /// Tool results stored.
    pub results: u64,
    /// Their raw bytes.
    pub result_bytes: u64,
    /// Entities remembered.
    pub entities: u64,
    /// Summaries stored.
    pub summaries: u64,
}

/// How many locks the workflows' turns are spread over.
const TURN_STRIPES: usize = 64;

/// A tool result read whole: its workflow's key and handle, its hash, its text.
type Recalled = ((String, String), String, Arc<String>);

/// The workflows of one data directory. Calls on one workflow take turns (one of
/// [`TURN_STRIPES`] locks, chosen by a hash of the workflow's scope: a fixed set, so no lock
/// is ever dropped while a call waits on it); calls on different workflows mostly go at once.
#[derive(Debug)]
pub(crate) struct WorkflowRecords {
    /// The records: a row per workflow and per item.
    store: Box<dyn WorkflowStore>,
    turns: Vec<Mutex<()>>,
    /// What `turn` would take were the stripes ever fewer than the hash asks for.
    spare_turn: Mutex<()>,
    /// When the last sweep for expired workflows ran.
    last_sweep: Mutex<Option<std::time::Instant>>,
    /// The last tool result read whole (its workflow's key and handle, and its hash): a
    /// recall followed page by page inflates it once.
    last_recalled: Mutex<Option<Recalled>>,
}

impl WorkflowRecords {
    /// The workflows of the data directory `data_dir` (nothing is opened yet), or of the
    /// shared catalog `shared` (PostgreSQL: every node reads and writes them there).
    pub(crate) fn new(data_dir: &Path, shared: Option<&crate::index::CatalogUrl>) -> Self {
        let store: Box<dyn WorkflowStore> = match shared {
            Some(url) => Box::new(records_pg::PgRecordStore::new(url)),
            None => Box::new(RecordStore::new(data_dir)),
        };
        WorkflowRecords {
            store,
            turns: (0..TURN_STRIPES).map(|_| Mutex::new(())).collect(),
            spare_turn: Mutex::new(()),
            last_sweep: Mutex::new(None),
            last_recalled: Mutex::new(None),
        }
    }
}

/// The workflow layer of an ingestor (`crate::Ingestor::workflows`): its services and the
/// workflows' records.
#[derive(Debug, Clone, Copy)]
pub struct Workflows<'a> {
    ing: &'a Services,
    records: &'a WorkflowRecords,
}

/// The scope of `workflow` in the caller's `scope`, checked.
pub fn workflow_scope(scope: &Scope, workflow: &str) -> Result<Scope> {
    let w = scope.in_workflow(workflow.trim());
    crate::access::check_scope(&w).map_err(Error::Scope)?;
    Ok(w)
}

impl<'a> Workflows<'a> {
    /// The workflow layer over `services`, its records in `records`.
    pub(crate) fn new(services: &'a Services, records: &'a WorkflowRecords) -> Self {
        Workflows {
            ing: services,
            records,
        }
    }

    /// Run the pipeline on `inputs` in workflow scope `w` (once `w` has no other run
    /// going), stopping early once `stop` is set.
    fn ingest(&self, inputs: Vec<Input>, w: &Scope, stop: &AtomicBool) -> Result<IngestReport> {
        let quiet: &(dyn Fn(&FileReport) + Sync) = &|_| {};
        crate::pipeline::run_in_turn(
            self.ing,
            Box::new(inputs.into_iter()),
            w,
            &quiet,
            stop,
            true,
        )
    }

    fn root(&self) -> PathBuf {
        self.ing.data().legacy_workflows()
    }

    fn store(&self) -> &dyn WorkflowStore {
        &*self.records.store
    }

    fn principal_key(w: &Scope) -> String {
        principal_key(w)
    }

    /// The lock workflow `w`'s calls take turns on.
    fn turn(&self, w: &Scope) -> &Mutex<()> {
        let hash = blake3::hash(w.key().as_bytes());
        let i = usize::from(hash.as_bytes().first().copied().unwrap_or(0)) % TURN_STRIPES;
        let records = &self.records;
        records.turns.get(i).unwrap_or(&records.spare_turn)
    }

    /// Refuse a write that would start a workflow past `max_workflows` of its principal.
    fn check_new_workflow(&self, w: &Scope) -> Result<()> {
        if self.store().exists(w)? {
            return Ok(());
        }
        let max = self.ing.config().workflow.max_workflows;
        let held = self.store().count_of(&Self::principal_key(w))?;
        if held >= max {
            return Err(Error::Request(format!(
                "this scope holds {held} workflows, the most is {max}: end some (end_workflow) first"
            )));
        }
        Ok(())
    }

    /// Refuse to add `adding` items of `bytes` (in all) to `w` past `max_items` or
    /// `max_workflow_bytes`; `replacing` is the size of an item the write replaces.
    fn check_room(&self, w: &Scope, adding: usize, bytes: u64, replacing: u64) -> Result<()> {
        let used = self.store().usage(w)?;
        let config = &self.ing.config().workflow;
        if used.items + adding > config.max_items {
            return Err(Error::Request(format!(
                "this workflow holds {} items, the most is {}: end it or store less",
                used.items, config.max_items
            )));
        }
        let after = used.bytes.saturating_sub(replacing).saturating_add(bytes);
        if after > config.max_workflow_bytes {
            return Err(Error::Request(format!(
                "this workflow holds {} bytes (tool results, entities and summaries); with \
                 these {bytes} it would pass its {}: end it or store less",
                used.bytes, config.max_workflow_bytes
            )));
        }
        Ok(())
    }

    /// Index `text` as `name` in workflow scope `w` (as plain text, or JSON: never unpacked
    /// as a container), unless `stop` is set first: the chunks it got, or why it got none.
    fn index(
        &self,
        w: &Scope,
        name: &str,
        text: String,
        json: bool,
        stop: &AtomicBool,
    ) -> Result<std::result::Result<u32, String>> {
        let input = Input::Text {
            name: name.to_string(),
            text,
            json,
        };
        let report = self.ingest(vec![input], w, stop)?;
        let line = report.files.iter().find(|f| f.locator == name);
        Ok(match line {
            Some(f)
                if matches!(
                    f.status,
                    FileStatus::Indexed | FileStatus::Unchanged | FileStatus::Duplicate
                ) =>
            {
                Ok(f.chunks)
            }
            Some(f) => Err(f
                .reason
                .clone()
                .unwrap_or_else(|| format!("{:?}", f.status).to_lowercase())),
            None if stop.load(Ordering::SeqCst) => Err("the caller went away first".into()),
            None => Err("not indexed".into()),
        })
    }

    /// Index the texts `items` (name, text) of workflow scope `w` in one run.
    fn index_all(&self, w: &Scope, items: Vec<(String, String)>) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let inputs = items
            .into_iter()
            .map(|(name, text)| Input::Text {
                name,
                text,
                json: false,
            })
            .collect();
        self.ingest(inputs, w, &AtomicBool::new(false))?;
        Ok(())
    }

    /// Remove the indexed files `names` of workflow scope `w` (points, catalog entries and
    /// content indexes no other file holds).
    fn unindex(&self, w: &Scope, names: Vec<String>) -> Result<()> {
        if names.is_empty() {
            return Ok(());
        }
        let inputs = names
            .into_iter()
            .map(|locator| Input::Remove { locator })
            .collect();
        self.ingest(inputs, w, &AtomicBool::new(false))?;
        Ok(())
    }

    /// Keep `result` whole in `workflow` of `scope`, index it for search and return its
    /// handle. With `extract_entities`, the entities the rules of [`entities`] find in it
    /// are remembered with the handle as their source.
    pub fn store_tool_result(
        &self,
        scope: &Scope,
        workflow: &str,
        result: &ToolResult<'_>,
    ) -> Result<StoredResult> {
        self.store_tool_result_until(scope, workflow, result, &AtomicBool::new(false))
    }

    /// [`Workflows::store_tool_result`], which does not index the result once `stop` is set
    /// (its caller went away): the result is kept, and says why it is not searchable.
    pub fn store_tool_result_until(
        &self,
        scope: &Scope,
        workflow: &str,
        result: &ToolResult<'_>,
        stop: &AtomicBool,
    ) -> Result<StoredResult> {
        let ToolResult {
            tool,
            args,
            content,
            json,
            extract_entities,
        } = result;
        let (content, json, extract_entities) = (*content, *json, *extract_entities);
        let w = workflow_scope(scope, workflow)?;
        self.sweep();
        let max = self.ing.config().workflow.max_result_bytes;
        if content.len() as u64 > max {
            return Err(Error::Request(format!(
                "the tool result is {} bytes; at most {max} are stored",
                content.len()
            )));
        }
        let tool = tool.trim();
        if tool.is_empty() || tool.len() > MAX_TOOL_NAME_BYTES {
            return Err(Error::Request(format!(
                "tool must be a name of 1 to {MAX_TOOL_NAME_BYTES} bytes"
            )));
        }
        let args_len = args.to_string().len();
        if args_len > MAX_ARGS_BYTES {
            return Err(Error::Request(format!(
                "args are {args_len} bytes of JSON; at most {MAX_ARGS_BYTES} are recorded"
            )));
        }
        let _held = lock(self.turn(&w));
        self.check_new_workflow(&w)?;
        let mut meta = ResultMeta {
            handle: String::new(),
            tool: tool.to_string(),
            args: (*args).clone(),
            raw_bytes: content.len() as u64,
            raw_chars: content.chars().count() as u64,
            hash: blake3::hash(content.as_bytes()).to_hex().to_string(),
            format: if json { "json" } else { "text" }.into(),
            stored_at: now_secs(),
            chunks: 0,
            not_indexed: None,
        };
        self.check_room(&w, 1, Item::Result(meta.clone()).bytes(), 0)?;
        let number = self
            .store()
            .next_number(&w, &Self::principal_key(&w), now_secs())?;
        meta.handle = format!("tr_{number}");
        self.store().put_text(&w, &meta.handle, content)?;
        // Recorded before indexing: a crash in between leaves a result that can be recalled
        // and ended, never an indexed file without its record.
        self.store()
            .put(&w, &Item::Result(meta.clone()), now_secs())?;
        // The result is kept whatever indexing does: the caller gets its handle either way.
        let indexed = self
            .index(&w, &meta.indexed_name(), content.to_string(), json, stop)
            .unwrap_or_else(|e| Err(e.to_string()));
        match indexed {
            Ok(chunks) => meta.chunks = chunks,
            Err(why) => meta.not_indexed = Some(why),
        }
        self.store()
            .put(&w, &Item::Result(meta.clone()), now_secs())?;
        let mut found = Vec::new();
        if extract_entities && !stop.load(Ordering::SeqCst) {
            let mut texts = Vec::new();
            for e in entities::find(content) {
                let entity = Entity {
                    key: e.key(),
                    value: e.value.clone(),
                    source: Some(meta.handle.clone()),
                    updated_at: now_secs(),
                };
                let item = Item::Entity(entity.clone());
                let replacing = self
                    .store()
                    .get(&w, Kind::Entity, &entity.key)?
                    .map(|old| old.bytes());
                // As many as the workflow has room for; the rest are not remembered.
                let adding = usize::from(replacing.is_none());
                if self
                    .check_room(&w, adding, item.bytes(), replacing.unwrap_or(0))
                    .is_err()
                {
                    break;
                }
                self.store().put(&w, &item, now_secs())?;
                texts.push((entity.indexed_name(), entity.text()));
                found.push(entity.key);
            }
            if let Err(e) = self.index_all(&w, texts) {
                tracing::warn!("entities of {} kept but not searchable: {e}", meta.handle);
            }
        }
        Ok(StoredResult {
            meta,
            entities: found,
        })
    }

    /// The tool result `handle` of `workflow` and its whole text; `None` when this workflow
    /// holds no such handle (whoever else may hold one).
    pub fn recall(
        &self,
        scope: &Scope,
        workflow: &str,
        handle: &str,
    ) -> Result<Option<(ResultMeta, Arc<String>)>> {
        let w = workflow_scope(scope, workflow)?;
        self.sweep();
        let Some(Item::Result(meta)) = self.store().get(&w, Kind::Result, handle.trim())? else {
            return Ok(None);
        };
        let id = (w.key(), meta.handle.clone());
        let cache = &self.records.last_recalled;
        let cached = lock(cache)
            .as_ref()
            .filter(|(i, h, _)| *i == id && *h == meta.hash)
            .map(|(_, _, t)| Arc::clone(t));
        let text = match cached {
            Some(t) => t,
            None => {
                // Gone meanwhile (the workflow ended): as if it never was.
                let Some(t) = self.store().text(&w, &meta.handle, meta.raw_bytes)? else {
                    return Ok(None);
                };
                let t = Arc::new(t);
                *lock(cache) = Some((id, meta.hash.clone(), Arc::clone(&t)));
                t
            }
        };
        self.store().touch(&w, now_secs())?;
        Ok(Some((meta, text)))
    }

    /// Remember entity `key` = `value` in `workflow` (replacing an earlier value of the same
    /// key); `true` when the key is new.
    pub fn remember(
        &self,
        scope: &Scope,
        workflow: &str,
        key: &str,
        value: &str,
        source: Option<&str>,
    ) -> Result<bool> {
        let w = workflow_scope(scope, workflow)?;
        self.sweep();
        let key = key.trim();
        if key.is_empty() || key.len() > MAX_KEY_BYTES {
            return Err(Error::Request(format!(
                "key must be 1 to {MAX_KEY_BYTES} bytes"
            )));
        }
        if value.len() > MAX_VALUE_BYTES || source.is_some_and(|s| s.len() > MAX_VALUE_BYTES) {
            return Err(Error::Request(format!(
                "value and source may be at most {MAX_VALUE_BYTES} bytes each"
            )));
        }
        let _held = lock(self.turn(&w));
        self.check_new_workflow(&w)?;
        let entity = Entity {
            key: key.to_string(),
            value: value.to_string(),
            source: source.map(str::to_string).filter(|s| !s.trim().is_empty()),
            updated_at: now_secs(),
        };
        let item = Item::Entity(entity.clone());
        let replacing = self
            .store()
            .get(&w, Kind::Entity, key)?
            .map(|old| old.bytes());
        let new = replacing.is_none();
        self.check_room(&w, usize::from(new), item.bytes(), replacing.unwrap_or(0))?;
        self.store()
            .ensure(&w, &Self::principal_key(&w), now_secs())?;
        self.store().put(&w, &item, now_secs())?;
        let name = entity.indexed_name();
        if let Err(why) = self.index(&w, &name, entity.text(), false, &AtomicBool::new(false))? {
            tracing::warn!("entity {key:?} kept but not searchable: {why}");
        }
        Ok(new)
    }

    /// Every entity of `workflow`, by key.
    pub fn entities(&self, scope: &Scope, workflow: &str) -> Result<Vec<Entity>> {
        let w = workflow_scope(scope, workflow)?;
        list_as(self.store(), &w, Kind::Entity, None, |i| match i {
            Item::Entity(e) => Some(e),
            _ => None,
        })
    }

    /// Store a conversation summary of `workflow` (the host's model wrote it); its id.
    pub fn store_summary(
        &self,
        scope: &Scope,
        workflow: &str,
        text: &str,
        covers: Option<&str>,
    ) -> Result<String> {
        let w = workflow_scope(scope, workflow)?;
        self.sweep();
        if text.trim().is_empty() || text.len() > MAX_SUMMARY_BYTES {
            return Err(Error::Request(format!(
                "a summary must be 1 to {MAX_SUMMARY_BYTES} bytes"
            )));
        }
        if covers.is_some_and(|c| c.len() > MAX_VALUE_BYTES) {
            return Err(Error::Request(format!(
                "covers may be at most {MAX_VALUE_BYTES} bytes"
            )));
        }
        let _held = lock(self.turn(&w));
        self.check_new_workflow(&w)?;
        let mut summary = Summary {
            id: String::new(),
            text: text.to_string(),
            covers: covers.map(str::to_string).filter(|c| !c.trim().is_empty()),
            stored_at: now_secs(),
        };
        self.check_room(&w, 1, Item::Summary(summary.clone()).bytes(), 0)?;
        let number = self
            .store()
            .next_number(&w, &Self::principal_key(&w), now_secs())?;
        summary.id = format!("s_{number}");
        let (id, name) = (summary.id.clone(), summary.indexed_name());
        self.store().put(&w, &Item::Summary(summary), now_secs())?;
        let indexed = self.index(&w, &name, text.to_string(), false, &AtomicBool::new(false))?;
        if let Err(why) = indexed {
            tracing::warn!("summary {id} kept but not searchable: {why}");
        }
        Ok(id)
    }

    /// The summaries of `workflow`, oldest first.
    pub fn summaries(&self, scope: &Scope, workflow: &str) -> Result<Vec<Summary>> {
        let w = workflow_scope(scope, workflow)?;
        self.latest_summaries(&w, None)
    }

    /// The newest `last` summaries of workflow scope `w` (all when `None`), oldest first.
    pub(crate) fn latest_summaries(&self, w: &Scope, last: Option<usize>) -> Result<Vec<Summary>> {
        list_as(self.store(), w, Kind::Summary, last, |i| match i {
            Item::Summary(s) => Some(s),
            _ => None,
        })
    }

    /// The tool results of `workflow`, oldest first.
    pub fn results(&self, scope: &Scope, workflow: &str) -> Result<Vec<ResultMeta>> {
        let w = workflow_scope(scope, workflow)?;
        list_as(self.store(), &w, Kind::Result, None, |i| match i {
            Item::Result(m) => Some(m),
            _ => None,
        })
    }

    /// The entity, tool result or summary of workflow scope `w` indexed under `name`: what
    /// a search hit in the workflow's scope is.
    pub(crate) fn item_named(&self, w: &Scope, name: &str) -> Result<Option<WorkflowItem>> {
        Ok(self.store().indexed(w, name)?.map(|item| match item {
            Item::Entity(e) => WorkflowItem::Entity(e),
            Item::Result(m) => WorkflowItem::Result(m),
            Item::Summary(s) => WorkflowItem::Summary(s),
        }))
    }

    /// Mark workflow scope `w` as used now (its time to live starts again).
    pub(crate) fn touch(&self, w: &Scope) -> Result<()> {
        self.store().touch(w, now_secs())
    }

    /// Delete everything of `workflow` (its indexed files and their points, its blobs and
    /// records), or, with `keep_summary`, everything but its summaries.
    pub fn end(&self, scope: &Scope, workflow: &str, keep_summary: bool) -> Result<Ended> {
        let w = workflow_scope(scope, workflow)?;
        let _held = lock(self.turn(&w));
        self.end_locked(&w, keep_summary)
    }

    fn end_locked(&self, w: &Scope, keep_summary: bool) -> Result<Ended> {
        let count = |kind| -> Result<usize> { Ok(self.store().list(w, kind, None)?.len()) };
        let mut ended = Ended {
            results: count(Kind::Result)?,
            entities: count(Kind::Entity)?,
            ..Ended::default()
        };
        let summaries = self.latest_summaries(w, None)?;
        let mut names: Vec<String> = self.indexed_names(w);
        if keep_summary {
            let kept: Vec<String> = summaries.iter().map(Summary::indexed_name).collect();
            names.retain(|n| !kept.contains(n));
            ended.summaries_kept = summaries.len();
        } else {
            ended.summaries = summaries.len();
        }
        // Files indexed by a call that crashed before its record are removed too.
        self.unindex(w, names)?;
        if keep_summary {
            self.store()
                .delete(w, &[Kind::Result, Kind::Entity], false)?;
        } else {
            self.store().delete(w, &[], true)?;
        }
        // What was deleted leaves no earlier page in the databases' logs.
        self.store().truncate_log();
        self.ing.catalog().truncate_log();
        self.store().drop_texts(w)?;
        Ok(ended)
    }

    /// Every file the catalog holds in workflow scope `w`.
    fn indexed_names(&self, w: &Scope) -> Vec<String> {
        self.ing
            .catalog()
            .entries(w)
            .into_iter()
            .filter(|e| e.parent.is_none())
            .map(|e| e.locator)
            .collect()
    }

    /// End every workflow untouched for longer than the time to live, at most once per
    /// [`SWEEP_EVERY`]. Failures are logged: a sweep never fails the call that ran it.
    pub(crate) fn sweep(&self) {
        {
            let mut last = lock(&self.records.last_sweep);
            if last.is_some_and(|t| t.elapsed() < SWEEP_EVERY) {
                return;
            }
            *last = Some(std::time::Instant::now());
        }
        match self.sweep_expired(SystemTime::now()) {
            Ok(0) => {}
            Ok(n) => tracing::info!("ended {n} workflows past their time to live"),
            Err(e) => tracing::warn!("workflow sweep: {e}"),
        }
    }

    /// End every workflow last used before `now - ttl` (its kept summaries too), at most
    /// [`SWEEP_BATCH`] at once; how many. A workflow that cannot be ended is logged and left
    /// for the next sweep.
    pub fn sweep_expired(&self, now: SystemTime) -> Result<usize> {
        let ttl = self.ing.config().workflow.ttl;
        let Some(cutoff) = now.checked_sub(ttl) else {
            return Ok(0);
        };
        let secs = |t: SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        };
        let cutoff = secs(cutoff);
        let mut ended = 0;
        for w in self.store().unused_since(cutoff, SWEEP_BATCH)? {
            let _held = lock(self.turn(&w));
            // Used again since it was looked at: it stays.
            if self.store().touched_at(&w)?.is_none_or(|t| t >= cutoff) {
                continue;
            }
            match self.end_locked(&w, false) {
                Ok(_) => ended += 1,
                Err(e) => tracing::warn!("workflow sweep: {e}"),
            }
        }
        Ok(ended)
    }

    /// Counts over every workflow (status, metrics).
    pub fn stats(&self) -> Result<WorkflowStats> {
        self.store().stats()
    }

    /// Move the records of the earlier layout (a `record.json` per workflow) into the
    /// database; how many. Looked for only while no database exists.
    pub(crate) fn import_legacy(&self) -> Result<usize> {
        let root = self.root();
        if self.store().exists_on_disk() || !root.is_dir() {
            return Ok(0);
        }
        self.store().import_legacy(&root)
    }

    /// Copy every workflow into the shared catalog at `url` (`ingest migrate`): the
    /// workflows and items copied.
    pub(crate) fn copy_into(&self, url: &crate::index::CatalogUrl) -> Result<(usize, usize)> {
        records::copy_all(self.store(), &records_pg::PgRecordStore::new(url))
    }

    /// Set when workflow `workflow` of `scope` was last used (tests of the time to live).
    #[cfg(test)]
    pub(crate) fn set_touched(&self, scope: &Scope, workflow: &str, at: SystemTime) {
        let w = workflow_scope(scope, workflow).unwrap();
        let secs = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        self.store().touch(&w, secs).unwrap();
    }
}

/// The folders in `dir` (none when it does not exist).
fn subfolders(dir: &Path) -> Result<Vec<PathBuf>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// The key of `w`'s principal (its user, feature instance and mandate).
fn principal_key(w: &Scope) -> String {
    Scope {
        workflow_id: None,
        is_shared: false,
        ..w.clone()
    }
    .key()
}

/// The first 32 hex digits of blake3 of `key`: a folder name.
fn short_hash(key: &str) -> String {
    let hash = blake3::hash(key.as_bytes()).to_hex();
    hash.as_str().get(..32).unwrap_or_default().to_string()
}

/// An item of a workflow, as a search hit in its scope names it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WorkflowItem {
    Entity(Entity),
    Result(ResultMeta),
    Summary(Summary),
}

/// Write `text` deflated to `path`, owner-only.
fn write_blob(path: &Path, text: &str) -> Result<()> {
    let file = crate::perms::create_file(path)?;
    let mut enc = flate2::write::DeflateEncoder::new(file, flate2::Compression::fast());
    enc.write_all(text.as_bytes())
        .and_then(|_| enc.finish().map(|_| ()))
        .map_err(|e| Error::io(path, e))
}

/// The text deflated in `path`, which must be `bytes` long (a longer stream is refused: it
/// was not written by [`write_blob`]).
fn read_blob(path: &Path, bytes: u64) -> Result<String> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    inflate(file, bytes, &path.display().to_string())
}

/// `text` deflated (a tool result's text in a database).
pub(crate) fn deflate(text: &str) -> Result<Vec<u8>> {
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes())
        .and_then(|_| enc.finish())
        .map_err(|e| Error::Workflow(format!("deflating a tool result: {e}")))
}

/// The text deflated in `compressed` (named `what` in errors), which must be `bytes` long:
/// a longer stream is refused, read no further than one byte past it.
#[allow(clippy::disallowed_methods)] // bounded by `take`
pub(crate) fn inflate(compressed: impl Read, bytes: u64, what: &str) -> Result<String> {
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(compressed)
        .take(bytes.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| Error::Workflow(format!("{what}: {e}")))?;
    if out.len() as u64 != bytes {
        return Err(Error::Workflow(format!(
            "{what}: {} bytes, the record says {bytes}",
            out.len()
        )));
    }
    String::from_utf8(out).map_err(|e| Error::Workflow(format!("{what}: {e}")))
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn blobs_round_trip_and_a_wrong_length_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.deflate");
        let text = "ünï ".repeat(10_000);
        write_blob(&p, &text).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() < 1000);
        assert_eq!(read_blob(&p, text.len() as u64).unwrap(), text);
        assert!(read_blob(&p, 10).is_err());
    }

    #[test]
    fn entity_names_are_hashes_not_keys() {
        let n = entity_name("../../etc/passwd");
        assert!(n.starts_with("entities/e_") && n.ends_with(".txt"), "{n}");
        assert!(!n.contains(".."));
        assert_ne!(entity_name("a"), entity_name("b"));
        crate::names::upload_name(&n).unwrap();
    }
}
