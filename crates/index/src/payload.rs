//! The payload schema: the fields every point carries, written and read here only, so that
//! every backend stores the same points and filters them the same way. Filters are built here
//! as typed filters ([`super::filter`]) that each backend converts into its own.
//!
//! A point's payload: the chunk (`text`, `fragment`, `chunk_index`, `object_id`,
//! `content_type`, `kind` (`passage` or `card`), and its context: `label`, `page_index`, `section_id`, `sheet_name`,
//! `slide_index`, and `section_path`: every ancestor of `section_id`), its content
//! (`content_hash`, `locators`: the files holding it, the first shown in results, and
//! `containers`: every folder, archive and file any of them lies in or is; `names` and
//! `name_words`: those files' names and their words; `tags`: the user tags of those files,
//! `key=value`) and its scope
//! (`scope_key`, `user_id`, `feature_instance_id`, `mandate_id`, `is_shared`, `workflow_id`).

use serde_json::{json, Map, Value};

use super::filter::{Condition, Field, Filter, Value as Is};
use super::{Hit, Holders, PointRecord, SearchFilter, StoredChunk};
use crate::access::{self, ReadRule};
use crate::embed::ChunkKind;
use extractors::{Scope, MEMBER_SEPARATOR, SECTION_SEPARATOR};

/// Fields with a keyword index: everything searches and deletes filter on.
pub(super) const KEYWORD_FIELDS: &[&str] = &[
    "scope_key",
    "content_hash",
    "user_id",
    "mandate_id",
    "feature_instance_id",
    "workflow_id",
    "containers",
    "section_path",
    "content_type",
    "sheet_name",
    "tags",
    "kind",
    "names",
    "name_words",
];

/// Fields with a bool index: the scope rule's and `gather_context`'s shared-or-not condition.
/// Without it a filtered search checks the condition by reading every candidate's payload.
pub(super) const BOOL_FIELDS: &[&str] = &["is_shared"];

/// Fields with an integer index: the page and slide filters of a search.
pub(super) const INTEGER_FIELDS: &[&str] = &["page_index", "slide_index"];

/// The fields [`record`] reads: a backend asks only for these when it lists every point.
pub(super) const RECORD_FIELDS: &[&str] = &[
    "scope_key",
    "content_hash",
    "chunk_index",
    "locators",
    "tags",
];

/// The payload of chunk `c` stored in `scope` (whose key is `scope_key`).
pub(super) fn of_chunk(scope: &Scope, scope_key: &str, c: &StoredChunk) -> Value {
    let ctx = &c.chunk.context_ref;
    let fragment = extractors::split_fragment(&ctx.location).1;
    json!({
        "text": c.chunk.text,
        "fragment": fragment,
        "locators": c.locators,
        "tags": c.tags,
        "content_hash": c.content_hash,
        "chunk_index": c.chunk.index,
        "object_id": c.chunk.object_id,
        "content_type": c.chunk.content_type.as_str(),
        "kind": c.chunk.kind.as_str(),
        "label": ctx.label,
        "page_index": ctx.page_index,
        "section_id": ctx.section_id,
        "sheet_name": ctx.sheet_name,
        "slide_index": ctx.slide_index,
        "section_path": section_path(ctx.section_id.as_deref()),
        "containers": containers(&c.locators),
        "names": names(&c.locators),
        "name_words": super::name_match::words_of_names(&c.locators),
        "scope_key": scope_key,
        "user_id": scope.user_id,
        "feature_instance_id": scope.feature_instance_id,
        "mandate_id": scope.mandate_id,
        "is_shared": scope.is_shared,
        "workflow_id": scope.workflow_id,
    })
}

/// The payload update that points a content's chunks at the files in `holders` with their
/// tags (and rewrites `containers`, which derives from the files).
pub(super) fn holders_update(holders: &Holders) -> Map<String, Value> {
    let mut payload = Map::new();
    payload.insert("locators".into(), json!(holders.locators));
    payload.insert("containers".into(), json!(containers(&holders.locators)));
    payload.insert("names".into(), json!(names(&holders.locators)));
    payload.insert(
        "name_words".into(),
        json!(super::name_match::words_of_names(&holders.locators)),
    );
    payload.insert("tags".into(), json!(holders.tags));
    payload
}

/// The most entries of a point's `containers` (and so of the folders and archives a
/// locator filter can find it under). Member paths are bounded (`ingest::Limits`), so
/// this is only reached by a content held by many files; the first files' folders win.
pub(super) const MAX_CONTAINERS: usize = 256;

/// The most entries of a point's `section_path`: deeper sections are found by their
/// ancestors'.
const MAX_SECTION_LEVELS: usize = 16;

/// The names of the files holding a content, lowercase, each once: what an exact file-name
/// search ([`SearchFilter::file_name`]) matches.
pub(super) fn names(locators: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for locator in locators.iter().take(MAX_CONTAINERS) {
        let name = locator
            .rsplit(['/', '!'])
            .find(|s| !s.is_empty())
            .unwrap_or(locator)
            .to_lowercase();
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Every locator in `locators` and every folder and container it lies in, without
/// duplicates, in first-seen order (at most [`MAX_CONTAINERS`]): `/d/b.zip!/docs/x.md` gives `/d`, `/d/b.zip`,
/// `/d/b.zip!/docs` and itself. A relative locator (an upload: `up.zip!/a.txt`) gives
/// `up.zip` and itself. The root `/` is not listed.
pub(super) fn containers(locators: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut push = |p: &str| {
        if out.len() < MAX_CONTAINERS
            && !p.is_empty()
            && !p.ends_with('/')
            && seen.insert(p.to_string())
        {
            out.push(p.to_string());
        }
    };
    for locator in locators {
        for (i, _) in locator.match_indices('/') {
            let Some(prefix) = locator.get(..i) else {
                continue;
            };
            // `a.zip!/b`: the container is `a.zip`.
            let sep = MEMBER_SEPARATOR.trim_end_matches('/');
            push(prefix.strip_suffix(sep).unwrap_or(prefix));
        }
        push(locator);
    }
    out
}

/// The fields [`derived_update`] derives from, for [`derived_source`].
pub(super) const DERIVED_FROM: &[&str] = &["locators", "section_id"];

/// Filter: points written before `containers` existed (every point has a locator, so
/// `containers` is never empty otherwise).
pub(super) fn lacking_derived() -> Filter {
    Filter::all(vec![Condition::Empty(Field::Containers)])
}

/// Filter: points with a multilingual vector (chunks in other languages than English).
pub(super) fn with_multilingual_vector() -> Filter {
    Filter::all(vec![Condition::HasMultilingualVector])
}

/// Filter: points without a keyword vector (written by a version without keyword search).
pub(super) fn lacking_keyword_vector() -> Filter {
    Filter::none(vec![Condition::HasKeywordVector])
}

/// What the derived fields of a point are computed from: its locators and section path.
pub(super) fn derived_source(payload: &Map<String, Value>) -> (Vec<String>, Option<String>) {
    let section = payload
        .get("section_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    (locators(payload), section)
}

/// The payload update that sets the fields derived from a point's `locators` and
/// `section_id` (`containers`, `section_path`): for points an earlier version wrote.
pub(super) fn derived_update(locators: &[String], section: Option<&str>) -> Map<String, Value> {
    let mut payload = Map::new();
    payload.insert("containers".into(), json!(containers(locators)));
    payload.insert("section_path".into(), json!(section_path(section)));
    payload
}

/// Condition: a point of a file at or under `key` (a [`container_key`]): its `containers`
/// list `key`, or it is one of the `unnamed` contents (scope key, content hash) the catalog
/// holds there.
fn under_locator(key: &str, unnamed: &[(String, String)]) -> Condition {
    let named = Condition::keyword(Field::Containers, key);
    if unnamed.is_empty() {
        return named;
    }
    let mut by_scope: std::collections::BTreeMap<&str, Vec<Condition>> = Default::default();
    for (scope_key, hash) in unnamed {
        by_scope
            .entry(scope_key)
            .or_default()
            .push(Condition::keyword(Field::ContentHash, hash.as_str()));
    }
    let mut any = vec![named];
    any.extend(by_scope.into_iter().map(|(scope_key, hashes)| {
        Condition::All(Filter::all(vec![
            Condition::keyword(Field::ScopeKey, scope_key),
            Condition::All(Filter::any(hashes)),
        ]))
    }));
    Condition::All(Filter::any(any))
}

/// A locator prefix as [`containers`] lists it: without a trailing `/` or `!/`.
pub(super) fn container_key(prefix: &str) -> &str {
    let p = prefix.trim_end_matches('/');
    if p.len() < prefix.len() {
        p.strip_suffix(MEMBER_SEPARATOR.trim_end_matches('/'))
            .unwrap_or(p)
    } else {
        p
    }
}

/// Every ancestor of the section path `section` and the path itself: `2 Setup › 2.1 Install`
/// gives `2 Setup` and `2 Setup › 2.1 Install`. Empty for no section.
pub(super) fn section_path(section: Option<&str>) -> Vec<String> {
    let Some(section) = section.filter(|s| !s.is_empty()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, _) in section.match_indices(SECTION_SEPARATOR) {
        if out.len() + 1 >= MAX_SECTION_LEVELS {
            break;
        }
        if let Some(p) = section.get(..i).filter(|p| !p.is_empty()) {
            out.push(p.to_string());
        }
    }
    out.push(section.to_string());
    out
}

/// The `locators` list of a point's (or a holder record's) payload: the files holding its
/// content.
pub(super) fn locators(payload: &Map<String, Value>) -> Vec<String> {
    strings(payload, "locators")
}

/// The `tags` list of a point's (or a holder record's) payload: its files' tags.
pub(super) fn tags(payload: &Map<String, Value>) -> Vec<String> {
    strings(payload, "tags")
}

/// A payload field that is a list of strings (empty when missing).
fn strings(payload: &Map<String, Value>, key: &str) -> Vec<String> {
    payload
        .get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What a stored point is matched on by keywords ([`super::keywords::keyword_text`]), from
/// its payload's `text`, `section_id` and `locators`.
pub(super) fn keyword_source(payload: &Map<String, Value>) -> String {
    let s = |k: &str| payload.get(k).and_then(Value::as_str);
    super::keywords::keyword_text(
        s("text").unwrap_or_default(),
        s("section_id"),
        &locators(payload),
        kind(payload),
    )
}

/// Whether a point is a card (`kind: card`) or a passage (any other point: those written
/// before cards have no `kind`).
pub(super) fn kind(payload: &Map<String, Value>) -> ChunkKind {
    match payload.get("kind").and_then(Value::as_str) {
        Some("card") => ChunkKind::Card,
        _ => ChunkKind::Passage,
    }
}

/// Filter: the card of content `hash` in the scope whose key is `scope_key`.
pub(super) fn card_filter(scope_key: &str, hash: &str) -> Filter {
    Filter::all(vec![
        Condition::keyword(Field::ScopeKey, scope_key),
        Condition::keyword(Field::ContentHash, hash),
        Condition::keyword(Field::Kind, ChunkKind::Card.as_str()),
    ])
}

/// The payload fields [`keyword_source`] reads.
pub(super) const KEYWORD_SOURCE_FIELDS: &[&str] = &["text", "section_id", "locators", "kind"];

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
        tags: tags(payload),
    }
}

/// The first of `items` whose lengths add up to at most `max` bytes.
pub(super) fn within_bytes(items: &[String], max: usize) -> Vec<String> {
    let mut used = 0usize;
    items
        .iter()
        .take_while(|t| {
            used += t.len();
            used <= max
        })
        .cloned()
        .collect()
}

/// The search result for a point with this full payload and `score`.
pub(super) fn hit(payload: &Map<String, Value>, score: f32) -> Hit {
    let s = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_string);
    let u32_of = |k: &str| {
        payload
            .get(k)
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
    };
    let chunk_index = u32_of("chunk_index").unwrap_or_default();
    let locators = locators(payload);
    let all_tags = tags(payload);
    let shown_tags = within_bytes(&all_tags, super::MAX_HIT_TAG_BYTES);
    let file = locators.first().cloned().unwrap_or_default();
    let locator = match s("fragment").filter(|f| !f.is_empty()) {
        Some(f) => format!("{file}#{f}"),
        None => file,
    };
    Hit {
        locator,
        score,
        relevance: score,
        confidence: Default::default(),
        evidence: Default::default(),
        text: s("text").unwrap_or_default(),
        section: s("section_id"),
        label: s("label"),
        also_in_more: locators.len().saturating_sub(1 + super::MAX_HIT_ALSO_IN),
        also_in: locators
            .into_iter()
            .skip(1)
            .take(super::MAX_HIT_ALSO_IN)
            .collect(),
        tags_more: all_tags.len() - shown_tags.len(),
        tags: shown_tags,
        content_hash: s("content_hash").unwrap_or_default(),
        content_type: s("content_type").unwrap_or_default(),
        kind: kind(payload),
        page: u32_of("page_index"),
        sheet: s("sheet_name"),
        slide: u32_of("slide_index"),
        chunk_index,
        chunk_id: super::point_id(
            &s("scope_key").unwrap_or_default(),
            &s("content_hash").unwrap_or_default(),
            chunk_index,
        ),
        owner: Scope {
            user_id: s("user_id").unwrap_or_default(),
            feature_instance_id: s("feature_instance_id"),
            mandate_id: s("mandate_id"),
            is_shared: payload.get("is_shared").and_then(Value::as_bool) == Some(true),
            workflow_id: s("workflow_id"),
        },
    }
}

/// Filter: points of content `hash` in exactly the scope whose key is `scope_key`.
pub(super) fn content_filter(scope_key: &str, hash: &str) -> Filter {
    Filter::all(vec![
        Condition::keyword(Field::ScopeKey, scope_key),
        Condition::keyword(Field::ContentHash, hash),
    ])
}

/// Filter: what `scope` may read, narrowed by `filter` (every condition must hold).
pub(super) fn search_filter(scope: &Scope, filter: &SearchFilter) -> Filter {
    let mut out = Filter::all(vec![Condition::All(scope_filter(scope))]);
    let must = &mut out.must;
    if let Some(prefix) = &filter.locator_prefix {
        let key = container_key(prefix);
        if !key.is_empty() {
            must.push(under_locator(key, &filter.unnamed_under));
        }
    }
    if let Some(t) = filter.content_type {
        must.push(Condition::keyword(Field::ContentType, t.as_str()));
    }
    let card = Condition::keyword(Field::Kind, ChunkKind::Card.as_str());
    match filter.kind {
        Some(ChunkKind::Card) => must.push(card),
        // Points stored before cards existed have no `kind`: they are passages.
        Some(ChunkKind::Passage) => out.must_not.push(card),
        None => {}
    }
    if let Some((first, last)) = filter.pages {
        must.push(Condition::Between {
            field: Field::PageIndex,
            first: first.into(),
            last: last.into(),
        });
    }
    if let Some(section) = &filter.section_path {
        must.push(Condition::keyword(Field::SectionPath, section));
    }
    if let Some(sheet) = &filter.sheet {
        must.push(Condition::keyword(Field::SheetName, sheet));
    }
    if let Some(slide) = filter.slide {
        must.push(Condition::Is(Field::SlideIndex, Is::Integer(slide.into())));
    }
    for tag in &filter.tags {
        must.push(Condition::keyword(Field::Tags, tag));
    }
    if let Some(key) = &filter.owner_key {
        must.push(Condition::keyword(Field::ScopeKey, key));
    }
    if let Some(name) = &filter.file_name {
        must.push(Condition::keyword(Field::Names, name.to_lowercase()));
    }
    if let Some(shared) = filter.shared {
        must.push(Condition::Is(Field::IsShared, Is::Flag(shared)));
    }
    if !filter.ids.is_empty() {
        must.push(Condition::HasId(filter.ids.clone()));
    }
    for word in &filter.name_words {
        must.push(Condition::keyword(Field::NameWords, word));
    }
    out
}

/// Filter: what `scope` may read, the conditions of the one access rule ([`ReadRule`])
/// translated one by one: at least one alternative holds in full.
pub(super) fn scope_filter(scope: &Scope) -> Filter {
    let field = |f: access::Field| match f {
        access::Field::User => Field::UserId,
        access::Field::FeatureInstance => Field::FeatureInstanceId,
        access::Field::Mandate => Field::MandateId,
        access::Field::Workflow => Field::WorkflowId,
    };
    let condition = |c: &access::Condition| match c {
        access::Condition::Is(f, v) => Condition::keyword(field(*f), v.clone()),
        access::Condition::Absent(f) => Condition::Empty(field(*f)),
        access::Condition::Shared => Condition::Is(Field::IsShared, Is::Flag(true)),
        access::Condition::NotShared => Condition::Is(Field::IsShared, Is::Flag(false)),
    };
    Filter::any(
        ReadRule::of(scope)
            .alternatives()
            .iter()
            .map(|all| Condition::All(Filter::all(all.iter().map(condition).collect())))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn containers_lists_every_folder_archive_and_file_once() {
        let nested = "/work/fixtures/archives/bundle.zip!/docs/inner.tar.gz!/notes/lighthouse.md";
        assert_eq!(
            containers(&owned(&[nested])),
            [
                "/work",
                "/work/fixtures",
                "/work/fixtures/archives",
                "/work/fixtures/archives/bundle.zip",
                "/work/fixtures/archives/bundle.zip!/docs",
                "/work/fixtures/archives/bundle.zip!/docs/inner.tar.gz",
                "/work/fixtures/archives/bundle.zip!/docs/inner.tar.gz!/notes",
                nested,
            ]
        );
        assert_eq!(
            containers(&owned(&["upload.zip!/a.txt", "/d/a.txt", "/d/b.txt"])),
            [
                "upload.zip",
                "upload.zip!/a.txt",
                "/d",
                "/d/a.txt",
                "/d/b.txt"
            ]
        );
        assert_eq!(containers(&owned(&["notes.md"])), ["notes.md"]);
        assert_eq!(containers(&owned(&["a//b/"])), ["a", "a//b"]);
        assert!(containers(&[]).is_empty());
    }

    #[test]
    fn container_keys_drop_trailing_separators() {
        assert_eq!(container_key("/d/a/"), "/d/a");
        assert_eq!(container_key("/d/a.zip!/"), "/d/a.zip");
        assert_eq!(container_key("/d/a.zip"), "/d/a.zip");
        assert_eq!(container_key("/"), "");
        assert_eq!(container_key("wow!"), "wow!");
    }

    #[test]
    fn section_path_lists_every_ancestor() {
        assert_eq!(
            section_path(Some("2 Setup › 2.1 Install › Linux")),
            [
                "2 Setup",
                "2 Setup › 2.1 Install",
                "2 Setup › 2.1 Install › Linux"
            ]
        );
        assert_eq!(section_path(Some("Intro")), ["Intro"]);
        assert!(section_path(Some("")).is_empty());
        assert!(section_path(None).is_empty());
    }

    #[test]
    fn holders_update_rewrites_containers() {
        let update = holders_update(&Holders {
            locators: owned(&["/new/x.txt"]),
            tags: owned(&["team=ops"]),
        });
        assert_eq!(update["tags"], json!(["team=ops"]));
        assert_eq!(update["locators"], json!(["/new/x.txt"]));
        assert_eq!(update["containers"], json!(["/new", "/new/x.txt"]));
    }
}
