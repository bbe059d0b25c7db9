//! The source tools: `list_sources` (the registered remote folders the caller may use),
//! `browse_source` (one folder of a source, read from the service without indexing it) and
//! `pull_source` (index one object or folder of a source now). Searching within one source
//! is `search_documents` with `source`.
//!
//! A source is visible by the one access rule on its scope ([`crate::sources::visible`]);
//! one the caller may not use is answered exactly like a missing one. What is pulled is
//! indexed into the source's scope. No answer shows a credential, and no answer holds more
//! than a page of a folder.

use extractors::Scope;
use serde_json::{json, Map, Value};

use super::budget::Budget;
use super::cursor::{self, Position};
use super::paging::{fill_list, ListItems};
use super::{BrowseSourceArgs, Finished, FullResult, ListSourcesArgs, PullSourceArgs, ToolError};
use crate::index::EntryStatus;
use crate::ingestor::Ingestor;
use crate::pipeline::Input;
use crate::report::FileStatus;
use crate::sources::{RegisteredSource, RemoteSession, Source};

/// Cursor tags.
const LIST_TAG: &str = "ls";
const BROWSE_TAG: &str = "bs";

/// Entries one browse answer shows at most (each is looked up in the catalog).
const BROWSE_PAGE: usize = 200;

/// Objects one pull downloads at most: a larger folder is pulled in parts (its subfolders)
/// or kept in sync by the daemon.
pub const PULL_MAX_OBJECTS: usize = 1000;

/// The answer to a source name the caller may not use: the same as to one that does not
/// exist.
fn no_such_source(name: &str) -> ToolError {
    ToolError::Invalid(format!(
        "no such source in this scope: {}. Call list_sources to see the sources you may use.",
        name.chars().take(80).collect::<String>()
    ))
}

/// The registered source `name`, when `scope` may use it.
pub(super) fn find<'a>(
    ingestor: &'a Ingestor,
    scope: &'a Scope,
    name: &str,
) -> Result<&'a RegisteredSource, ToolError> {
    crate::sources::visible(&ingestor.config().sources, scope)
        .find(|s| s.name == name)
        .ok_or_else(|| no_such_source(name))
}

/// A path below a source's root as the caller gave it, checked: no `.`/`..` parts, no
/// control characters, bounded; `/` at either end dropped.
fn clean_path(path: Option<&str>) -> Result<String, ToolError> {
    let path = path.unwrap_or_default().trim().trim_matches('/');
    if path.len() > crate::sources::MAX_OBJECT_PATH_BYTES
        || path.chars().any(char::is_control)
        || path
            .split('/')
            .any(|p| p == "." || p == ".." || p.is_empty())
            && !path.is_empty()
    {
        return Err(ToolError::Invalid(format!(
            "path {:?}: a folder or file below the source's root, as browse_source shows it (no `.` or `..`, at most {} bytes)",
            path.chars().take(80).collect::<String>(),
            crate::sources::MAX_OBJECT_PATH_BYTES
        )));
    }
    Ok(path.to_string())
}

fn provider_name(s: &RegisteredSource) -> String {
    s.url
        .split("://")
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// Open a source's session, or say why not (worded without a secret: the URL carries none,
/// and OpenDAL's errors name the service, not the credentials).
fn session_of(ingestor: &Ingestor, source: &Source) -> Result<RemoteSession, ToolError> {
    RemoteSession::open(source, &ingestor.config().source_destinations)
        .map_err(|e| ToolError::Invalid(format!("the source cannot be opened: {e}")))
}

/// Answer a `list_sources` call.
pub(crate) fn list_sources(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &ListSourcesArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let digest = cursor::digest(args);
    let start = cursor::start(args.cursor.as_deref(), LIST_TAG, &digest)?;
    let catalog = ingestor.catalog();
    let items: Vec<Value> = crate::sources::visible(&ingestor.config().sources, scope)
        .filter_map(|s| {
            let url = s.source_url().ok()?;
            let owner = s.owner();
            let root = url.locator_root();
            let mut m = Map::new();
            m.insert("name".into(), json!(s.name));
            m.insert("provider".into(), json!(provider_name(s)));
            m.insert("locator".into(), json!(root));
            m.insert(
                "indexed_files".into(),
                json!(catalog.top_level_under(&owner, &root).len()),
            );
            m.insert("synced".into(), json!(s.sync));
            super::note_owner(&mut m, scope, &owner);
            Some(Value::Object(m))
        })
        .collect();
    let full = FullResult::of(items.iter().filter_map(|i| i["name"].as_str()));
    let mut base = Map::new();
    if items.is_empty() {
        base.insert("sources".into(), json!([]));
        base.insert(
            "note".into(),
            json!("no source is registered for this scope: only indexed documents can be read"),
        );
        return Ok(Finished {
            text: budget.finish(&base)?,
            full,
        });
    }
    let text = fill_list(
        budget,
        &base,
        &ListItems::new("sources", items, "sources"),
        start,
        LIST_TAG,
        &digest,
    )?;
    Ok(Finished { text, full })
}

/// Whether a listed file is indexed as it is now, in `owner`'s catalog.
fn index_state(
    ingestor: &Ingestor,
    owner: &Scope,
    locator: &str,
    size: u64,
    stamp: u64,
) -> &'static str {
    match ingestor.catalog().get(owner, locator) {
        None => "not indexed",
        Some(e) if e.size != size || (stamp != 0 && e.mtime_ns != stamp) => "changed since indexed",
        Some(e) => match e.status {
            EntryStatus::Indexed | EntryStatus::Container => "indexed",
            _ => "read, not indexed (failed or skipped: see browse_container)",
        },
    }
}

/// Answer a `browse_source` call: one folder of the source, read from the service now.
pub(crate) fn browse_source(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &BrowseSourceArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let digest = cursor::digest(args);
    let start = cursor::start(args.cursor.as_deref(), BROWSE_TAG, &digest)?;
    let registered = find(ingestor, scope, &args.source)?;
    let path = clean_path(args.path.as_deref())?;
    let source = registered.source().map_err(ToolError::Invalid)?;
    let owner = registered.owner();
    let session = session_of(ingestor, &source)?;
    let listing = session
        .list_folder(&path)
        .map_err(|e| ToolError::Invalid(format!("cannot browse {}: {e}", args.source)))?;
    let total = listing.entries.len();
    let full = FullResult::of(listing.entries.iter().map(|e| e.name.as_str()));
    let mut base = Map::new();
    base.insert("source".into(), json!(registered.name));
    base.insert("path".into(), json!(path));
    base.insert("locator".into(), json!(source.url.locator_of(&path)));
    if listing.truncated {
        base.insert(
            "truncated".into(),
            json!(format!(
                "the folder holds more than {} entries: only the first {} the service listed are shown",
                crate::sources::MAX_BROWSED_ENTRIES,
                crate::sources::MAX_BROWSED_ENTRIES
            )),
        );
    }
    if listing.long_paths > 0 {
        base.insert("long_paths_left_out".into(), json!(listing.long_paths));
    }
    if total == 0 {
        base.insert("entries".into(), json!([]));
        base.insert(
            "note".into(),
            json!("nothing here: an empty folder, or no such folder"),
        );
        return Ok(Finished {
            text: budget.finish(&base)?,
            full,
        });
    }
    let first = start.item.min(total);
    let mut shown: Vec<Value> = Vec::new();
    let mut end = first;
    // The answer without entries, with its `size` (a few digits more once entries are in).
    let mut used = {
        let mut a = base.clone();
        a.insert("entries".into(), json!([]));
        super::budget::json_len(&Value::Object(a)) + 16
    };
    while end < total && end - first < BROWSE_PAGE {
        let Some(e) = listing.entries.get(end) else {
            break;
        };
        let mut m = Map::new();
        if e.folder {
            m.insert("name".into(), json!(format!("{}/", e.name)));
            m.insert("kind".into(), json!("folder"));
        } else {
            let locator = source.url.locator_of(&e.path);
            m.insert("name".into(), json!(e.name));
            m.insert("kind".into(), json!("file"));
            m.insert("size".into(), json!(e.size));
            m.insert(
                "indexed".into(),
                json!(index_state(ingestor, &owner, &locator, e.size, e.stamp)),
            );
        }
        // The entry is kept if the answer still fits with it (and, when more follow, with
        // room for the cursor and `more`: their real lengths, near enough).
        let entry_len = super::budget::json_len(&Value::Object(m.clone())) + 1;
        let room = if end + 1 < total { 24 + 60 + 20 } else { 0 };
        if used + entry_len + room > budget.max {
            break;
        }
        used += entry_len;
        shown.push(Value::Object(m));
        end += 1;
    }
    let answer_of = |shown: &[Value]| {
        let end = first + shown.len();
        let mut answer = base.clone();
        answer.insert("entries".into(), Value::Array(shown.to_vec()));
        if end < total {
            let next = Position {
                item: end,
                from: 0,
                to: None,
            };
            answer.insert(
                "cursor".into(),
                json!(cursor::encode(BROWSE_TAG, &digest, next)),
            );
            answer.insert(
                "more".into(),
                json!(format!(
                    "{}-{end} of {total} shown; call again with this cursor for the rest",
                    first + 1
                )),
            );
        }
        answer
    };
    // The estimate above is near: settle exactly, dropping entries while it does not fit.
    while shown.len() > 1 && !budget.fits(&answer_of(&shown)) {
        shown.pop();
    }
    if shown.is_empty() {
        return Err(budget.too_small());
    }
    Ok(Finished {
        text: budget.finish(&answer_of(&shown))?,
        full,
    })
}

/// Answer a `pull_source` call: index one object or folder of the source now (into the
/// source's scope), at most [`PULL_MAX_OBJECTS`] objects.
pub(crate) fn pull_source(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &PullSourceArgs,
    budget: Budget,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Finished, ToolError> {
    let registered = find(ingestor, scope, &args.source)?;
    let path = clean_path(args.path.as_deref())?;
    let mut source = registered.source().map_err(ToolError::Invalid)?;
    let owner = registered.owner();
    // Counted like an upload: the source's owner holds at most `max_scope_files` entries,
    // shared or not.
    let quota = ingestor
        .config()
        .max_scope_files
        .map(|max| (ingestor.catalog().len_of_owner(&owner), max));
    if let Some((held, max)) = quota.filter(|(held, max)| held >= max) {
        return Err(ToolError::Invalid(format!(
            "source {}'s files hold {held} entries (files and archive members) of at most \
             {max} one scope may hold: nothing pulled; delete some first",
            registered.name
        )));
    }
    let mut room = quota.map_or(usize::MAX, |(held, max)| max - held);
    // A user other than the owner fills at most the source's share of the owner's quota.
    let share = registered
        .others_share(scope, ingestor.config().max_scope_files)
        .map(|max| {
            let root = source.url.locator_root();
            let held = ingestor.catalog().under(&owner, &root).len();
            (held, max)
        });
    if let Some((held, max)) = share {
        if held >= max {
            return Err(ToolError::Invalid(format!(
                "source {} holds {held} entries of the {max} its other users may pull \
                 into its owner's scope (its max_files): nothing pulled; its owner can pull more",
                registered.name
            )));
        }
        room = room.min(max - held);
    }
    let session = session_of(ingestor, &source)?;
    let kind = session
        .kind_of(&path)
        .map_err(|e| ToolError::Invalid(format!("cannot read {}: {e}", args.source)))?;
    drop(session);
    let locator = source.url.locator_of(&path);
    match kind {
        None => {
            return Err(ToolError::Invalid(format!(
                "nothing at {path:?} in source {}: browse_source shows what it holds",
                registered.name
            )))
        }
        Some(false) => source.file = Some(path.clone()),
        Some(true) => {
            if !path.is_empty() {
                source.url.root = [source.url.root.as_str(), path.as_str()]
                    .iter()
                    .filter(|p| !p.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join("/");
            }
            source.max_objects = Some(PULL_MAX_OBJECTS.min(room));
        }
    }
    tracing::info!(source = %registered.name, locator = %locator, "pulling from a source");
    let report =
        ingestor.ingest_until(vec![Input::Remote(Box::new(source))], &owner, &|_| {}, stop)?;
    let s = &report.summary;
    let mut base = Map::new();
    base.insert("source".into(), json!(registered.name));
    base.insert("locator".into(), json!(locator));
    base.insert(
        "files".into(),
        json!({"read": s.files, "indexed": s.indexed, "unchanged": s.unchanged,
               "duplicate": s.duplicate, "skipped": s.skipped, "failed": s.failed,
               "removed": s.removed}),
    );
    if room < PULL_MAX_OBJECTS {
        let why = match (share, quota) {
            (Some((held, max)), _) if max - held == room => format!(
                "the source held {held} entries of the {max} its other users may pull \
                 (its max_files)"
            ),
            (_, Some((held, max))) => format!(
                "the source's files held {held} entries of at most {max} one scope may hold"
            ),
            _ => String::new(),
        };
        base.insert(
            "quota".into(),
            json!(format!("{why}: this pull read at most {room} objects")),
        );
    }
    let searchable = s.indexed + s.unchanged + s.duplicate > 0;
    base.insert(
        "searchable".into(),
        json!(if searchable {
            format!("now: search_documents with source \"{}\" (or locator {locator}); browse_container with locator {locator}", registered.name)
        } else {
            "nothing new is searchable: see problems".to_string()
        }),
    );
    let problems: Vec<Value> = report
        .files
        .iter()
        .filter(|f| matches!(f.status, FileStatus::Failed | FileStatus::Skipped))
        .map(|f| json!({"locator": f.locator, "status": f.status, "reason": f.reason}))
        .collect();
    let full = FullResult::of(report.files.iter().map(|f| f.locator.as_str()));
    if problems.is_empty() {
        return Ok(Finished {
            text: budget.finish(&base)?,
            full,
        });
    }
    // As many problems as fit (found by bisection); the count says how many there were.
    base.insert("problem_count".into(), json!(problems.len()));
    let with = |keep: usize| {
        let mut a = base.clone();
        a.insert(
            "problems".into(),
            Value::Array(problems.get(..keep).unwrap_or(&[]).to_vec()),
        );
        a
    };
    let keep =
        super::budget::largest_fitting(0, problems.len(), |k| budget.fits(&with(k))).unwrap_or(0);
    Ok(Finished {
        text: budget.finish(&with(keep))?,
        full,
    })
}
