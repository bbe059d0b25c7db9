//! `browse_container`: structure first. For the scope's top level, a folder or an archive (at
//! any depth): its members, paged. For a document: its content index (pages and labels,
//! pages with images, tables or no text, object counts, and the outline summarised to the
//! budget: as many levels as fit, each collapsed node saying how many entries it hides, and
//! `section` to expand one).

use std::collections::BTreeMap;

use extractors::{FileContentIndex, PageInfo, Scope, StructureNode};
use serde_json::{json, Map, Value};

use super::budget::Budget;
use super::cursor;
use super::paging::{fill_list, ListItems};
use super::section::Section;
use super::view::{self, normalize, View};
use super::{BrowseArgs, Finished, FullResult, ToolError};
use crate::index::{CatalogEntry, EntryStatus};
use crate::ingestor::Ingestor;

/// The cursor tag of `browse_container`.
const TAG: &str = "b";

/// Answer a `browse_container` call.
pub(crate) fn browse_container(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &BrowseArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let digest = cursor::digest(args);
    let start = cursor::start(args.cursor.as_deref(), TAG, &digest)?;
    let view = View::of(ingestor, scope, args.owner.as_deref());
    let loc = normalize(args.locator.as_deref().unwrap_or(""));
    let listing = members(&view, &loc)?;
    let (base, items) = match listing {
        Listing::Members {
            kind,
            prefix,
            members,
        } => {
            if args.section.is_some() {
                return Err(ToolError::Invalid(
                    "section applies to documents; this locator is a container".into(),
                ));
            }
            let mut base = Map::new();
            let shown = if kind == "root" {
                prefix.trim_end_matches('/').to_string()
            } else {
                loc.clone()
            };
            base.insert("locator".into(), json!(shown));
            base.insert("kind".into(), json!(kind));
            if let Some(file_owner) = view.owner_of(&loc).filter(|_| kind == "folder") {
                // A colleague's file of the same name: read it with its `owner`.
                let label = crate::access::owner_label(file_owner);
                base.insert("other_owners".into(), json!([label]));
            }
            if let Some(reason) = view.entry(&loc).and_then(|e| e.reason.as_ref()) {
                // How the archive was read: its member count, or the limit that cut it short.
                base.insert("reason".into(), json!(reason));
            }
            base.insert("total".into(), json!(members.len()));
            let compact = members.iter().map(compact_member).collect();
            (
                base,
                ListItems::new("members", members, "members")
                    .with_compact(compact, &["kind", "total", "reason"]),
            )
        }
        Listing::Document(entry) => {
            let (mut base, outline) = document(ingestor, &entry, args.section.as_deref(), budget)?;
            view.note_owner(&mut base, &entry.locator);
            match outline {
                Outline::Whole(nodes) => {
                    let mut a = base;
                    a.insert("outline".into(), Value::Array(nodes));
                    let text = budget.finish(&a)?;
                    return Ok(finished(text));
                }
                Outline::Paged(nodes) => {
                    let compact = nodes
                        .iter()
                        .map(|n| {
                            let mut m = Map::new();
                            for key in ["id", "title", "hidden"] {
                                if let Some(v) = n.get(key) {
                                    m.insert(key.into(), v.clone());
                                }
                            }
                            Value::Object(m)
                        })
                        .collect();
                    let list = ListItems::new("outline", nodes, "outline entries");
                    (
                        base,
                        list.with_compact(compact, &["left_out", "page_labels"]),
                    )
                }
            }
        }
    };
    let text = fill_list(budget, &base, &items, start, TAG, &digest)?;
    Ok(finished(text))
}

fn finished(text: String) -> Finished {
    let full = FullResult::of([text.as_str()]);
    Finished { text, full }
}

enum Listing {
    Members {
        kind: &'static str,
        prefix: String,
        members: Vec<Value>,
    },
    Document(CatalogEntry),
}

/// The longest folder prefix (ending in `/`) shared by every top-level locator.
fn root_prefix(view: &View) -> String {
    let mut common: Option<&str> = None;
    for (loc, e) in &view.entries {
        if e.parent.is_some() || extractors::split_top(loc).1.is_some() {
            continue;
        }
        let dir = loc.rfind('/').map_or("", |i| loc.get(..=i).unwrap_or(""));
        common = Some(match common {
            None => dir,
            Some(c) => {
                let n = c
                    .char_indices()
                    .zip(dir.chars())
                    .take_while(|((_, a), b)| a == b)
                    .last()
                    .map_or(0, |((i, a), _)| i + a.len_utf8());
                let shared = c.get(..n).unwrap_or("");
                shared
                    .rfind('/')
                    .map_or("", |i| shared.get(..=i).unwrap_or(""))
            }
        });
    }
    common.unwrap_or("").to_string()
}

/// What is at `loc` for this scope: members of a container, or a document.
fn members(view: &View, loc: &str) -> Result<Listing, ToolError> {
    let (kind, prefix) = if loc.is_empty() {
        ("root", root_prefix(view))
    } else if let Some(e) = view
        .entry(loc)
        // A colleague's file named like a folder of the reader's own: the folder wins.
        .filter(|_| !view.own_folder_hidden_by_file(loc))
    {
        let inside = format!("{loc}!/");
        // An archive cut short by a limit is recorded as skipped, with the members it read.
        if e.status == EntryStatus::Container || view.has_under(&inside) {
            ("archive", inside)
        } else {
            return Ok(Listing::Document(e.clone()));
        }
    } else {
        let p = if loc.ends_with('/') {
            loc.to_string()
        } else {
            format!("{loc}/")
        };
        if !view.has_under(&p) {
            return Err(ToolError::NotFound(loc.to_string()));
        }
        ("folder", p)
    };
    // name → (files under it, is it a direct entry)
    let mut children: BTreeMap<String, usize> = BTreeMap::new();
    for (key, e) in view.entries.range(prefix.clone()..) {
        let Some(rest) = key.strip_prefix(prefix.as_str()) else {
            break;
        };
        let name = match rest.find('/') {
            Some(i) => rest.get(..i).unwrap_or(rest).trim_end_matches('!'),
            None => rest,
        };
        let counted = children.entry(name.to_string()).or_default();
        if e.status != EntryStatus::Container && key.len() > prefix.len() + name.len() {
            *counted += 1;
        }
    }
    let members = children
        .into_iter()
        .flat_map(|(name, under)| {
            let locator = format!("{prefix}{name}");
            // A name that is a folder (of files under it) and also a file of another
            // owner is listed twice: the folder, then the file with its owner.
            let both = under > 0
                && view.entry(&locator).is_some_and(|e| {
                    e.status != EntryStatus::Container && !view.has_under(&format!("{locator}!/"))
                })
                && view.has_under(&format!("{locator}/"));
            let folder = both.then(
                || json!({ "name": name, "locator": locator, "kind": "folder", "members": under }),
            );
            folder
                .into_iter()
                .chain(std::iter::once(member(view, &name, &locator, under)))
        })
        .collect();
    Ok(Listing::Members {
        kind,
        prefix,
        members,
    })
}

/// One member of a listing: a file, an archive, or a folder with `under` files below it.
fn member(view: &View, name: &str, locator: &str, under: usize) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(name));
    m.insert("locator".into(), json!(locator));
    view.note_owner(&mut m, locator);
    match view.entry(locator) {
        Some(e) if e.status == EntryStatus::Container => {
            m.insert("kind".into(), json!("archive"));
            m.insert("members".into(), json!(under));
            if let Some(r) = &e.reason {
                m.insert("reason".into(), json!(r));
            }
        }
        Some(e) => {
            m.insert("kind".into(), json!("file"));
            describe_file(&mut m, e);
        }
        None => {
            m.insert("kind".into(), json!("folder"));
            m.insert("members".into(), json!(under));
        }
    }
    Value::Object(m)
}

/// A member in compact form: name, kind, and status or member count.
fn compact_member(full: &Value) -> Value {
    let mut m = Map::new();
    for key in ["name", "kind", "status", "members"] {
        if let Some(v) = full.get(key) {
            m.insert(key.into(), v.clone());
        }
    }
    Value::Object(m)
}

/// A file entry's type, size, status, reason and chunks.
fn describe_file(m: &mut Map<String, Value>, e: &CatalogEntry) {
    if let Some(t) = &e.mime {
        m.insert("type".into(), json!(t));
    }
    if e.size > 0 {
        // `bytes`, not `size`: an answer's own `size` is its length.
        m.insert("bytes".into(), json!(e.size));
    }
    m.insert("status".into(), json!(e.status.as_str()));
    if let Some(r) = &e.reason {
        m.insert("reason".into(), json!(r));
    }
    if e.status == EntryStatus::Indexed {
        m.insert("chunks".into(), json!(e.chunks));
    }
}

/// `1-3, 7, 9-12`
fn ranges(pages: impl IntoIterator<Item = u32>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    let push = |out: &mut Vec<String>, (a, b): (u32, u32)| {
        out.push(if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        })
    };
    for p in pages {
        run = match run {
            Some((a, b)) if p == b + 1 => Some((a, p)),
            Some(r) => {
                push(&mut out, r);
                Some((p, p))
            }
            None => Some((p, p)),
        };
    }
    if let Some(r) = run {
        push(&mut out, r);
    }
    out.join(", ")
}

/// A page label that counts: prefix, number, style (0 decimal, 1 lower roman, 2 upper).
type LabelNumber = (String, u64, u8);

/// A page label as (prefix, number, style) when it counts: `12`, `iv`, `A-3`.
fn label_number(label: &str) -> Option<LabelNumber> {
    let digits = label
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit())
        .last()
        .map(|(i, _)| i);
    if let Some(i) = digits {
        let n = label.get(i..)?.parse().ok()?;
        return Some((label.get(..i)?.to_string(), n, 0));
    }
    let lower = label.to_ascii_lowercase();
    let value = |c| match c {
        'i' => Some(1),
        'v' => Some(5),
        'x' => Some(10),
        'l' => Some(50),
        'c' => Some(100),
        'd' => Some(500),
        'm' => Some(1000),
        _ => None,
    };
    let vals: Option<Vec<i64>> = lower.chars().map(value).collect();
    let vals = vals.filter(|v| !v.is_empty())?;
    let mut n = 0i64;
    for (k, v) in vals.iter().enumerate() {
        if vals.get(k + 1).is_some_and(|next| next > v) {
            n -= v;
        } else {
            n += v;
        }
    }
    let n = u64::try_from(n).ok().filter(|n| *n > 0)?;
    let style = if label.chars().all(|c| c.is_ascii_lowercase()) {
        1
    } else {
        2
    };
    Some((String::new(), n, style))
}

/// Runs of consecutive pages whose labels count up: `[{pages: "1-12", labels: "i-xii"}]`.
fn label_runs(pages: &[PageInfo]) -> Vec<Value> {
    if pages.iter().all(|p| p.label.is_none()) {
        return Vec::new();
    }
    let mut runs: Vec<(u32, u32, String, String)> = Vec::new();
    let mut prev: Option<(u32, Option<LabelNumber>)> = None;
    for p in pages {
        let label = p.label.clone().unwrap_or_else(|| p.page.to_string());
        let num = label_number(&label);
        let continues = match (&prev, &num) {
            (Some((pp, Some((pre, n, st)))), Some((pre2, n2, st2))) => {
                *pp + 1 == p.page && pre == pre2 && st == st2 && n + 1 == *n2
            }
            _ => false,
        };
        match runs.last_mut() {
            Some(r) if continues => {
                r.1 = p.page;
                r.3 = label;
            }
            _ => runs.push((p.page, p.page, label.clone(), label)),
        }
        prev = Some((p.page, num));
    }
    runs.into_iter()
        .map(|(a, b, la, lb)| {
            if a == b {
                json!({"pages": a.to_string(), "labels": la})
            } else {
                json!({"pages": format!("{a}-{b}"), "labels": format!("{la}-{lb}")})
            }
        })
        .collect()
}

/// The outline: whole (as many levels as fit), or paged (the top level does not fit).
enum Outline {
    Whole(Vec<Value>),
    Paged(Vec<Value>),
}

/// The last row of each sheet, from the objects' `rows=` fragments.
fn sheet_rows(index: &FileContentIndex) -> BTreeMap<String, u64> {
    let mut rows = BTreeMap::new();
    for o in &index.object_summary {
        let fragment = extractors::split_fragment(&o.location).1;
        let Ok(fragment) = fragment.parse::<extractors::Fragment>() else {
            continue;
        };
        if let (Some(s), Some((_, l))) = (fragment.sheet, fragment.rows) {
            let e = rows.entry(s).or_insert(0);
            *e = (*e).max(l);
        }
    }
    rows
}

/// A document's answer without its outline, and its outline summarised to what fits.
fn document(
    ingestor: &Ingestor,
    entry: &CatalogEntry,
    section: Option<&str>,
    budget: Budget,
) -> Result<(Map<String, Value>, Outline), ToolError> {
    let mut base = Map::new();
    base.insert("locator".into(), json!(entry.locator));
    base.insert("kind".into(), json!("document"));
    let mut file = Map::new();
    describe_file(&mut file, entry);
    base.extend(file);
    let Some(hash) = entry
        .hash
        .as_ref()
        .filter(|_| entry.status == EntryStatus::Indexed)
    else {
        return Ok((base, Outline::Whole(Vec::new())));
    };
    let index = view::content_index(ingestor, hash)?;
    if !base.contains_key("type") {
        base.insert("type".into(), json!(index.mime_type));
    }
    let s = &index.structure;
    // Optional facts, most useful first; dropped from the end if even they do not fit.
    let mut optional: Vec<(&str, Value)> = Vec::new();
    if let Some(n) = s.page_count {
        optional.push(("pages", json!(n)));
    }
    if let Some(n) = s.line_count {
        optional.push(("lines", json!(n)));
    }
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for o in &index.object_summary {
        *counts.entry(o.content_type.as_str()).or_default() += 1;
    }
    optional.push(("objects", json!(counts)));
    let labels = label_runs(&s.pages);
    if !labels.is_empty() {
        optional.push(("page_labels", Value::Array(labels)));
    }
    let page_set =
        |f: &dyn Fn(&PageInfo) -> bool| ranges(s.pages.iter().filter(|p| f(p)).map(|p| p.page));
    for (key, set) in [
        ("pages_with_images", page_set(&|p| p.images > 0)),
        ("pages_with_tables", page_set(&|p| p.has_table)),
        ("pages_without_text", page_set(&|p| p.text_bytes == 0)),
        ("pages_ocr", page_set(&|p| p.ocr)),
    ] {
        if !set.is_empty() {
            optional.push((key, json!(set)));
        }
    }
    let (nodes, root) = outline_nodes(&index, section)?;
    if let Some(r) = &root {
        optional.insert(0, ("expanded", r.describe()));
    }
    if !nodes.is_empty() {
        optional.push(("outline_total", json!(nodes.len())));
    }
    let mut left_out = Vec::new();
    for (k, v) in optional {
        let mut trial = base.clone();
        trial.insert(k.into(), v.clone());
        trial.insert("outline".into(), json!([]));
        if budget.fits(&trial) {
            base.insert(k.into(), v);
        } else {
            left_out.push(k);
        }
    }
    if !left_out.is_empty() {
        base.insert("left_out".into(), json!(left_out));
        base.insert(
            "more".into(),
            json!("some facts did not fit: ask again with a larger max_chars"),
        );
    }
    Ok((base.clone(), summarise(&base, &nodes, budget)))
}

/// One outline entry shown: index in the structure, depth below the root.
struct OutlineNode<'a> {
    i: usize,
    depth: u32,
    node: &'a StructureNode,
    /// Entries below it (all depths).
    descendants: usize,
    /// Rows of a sheet.
    rows: Option<u64>,
}

/// The entries under `section` (or all), with their depth and descendant counts.
fn outline_nodes<'a>(
    index: &'a FileContentIndex,
    section: Option<&str>,
) -> Result<(Vec<OutlineNode<'a>>, Option<Section>), ToolError> {
    let nodes = &index.structure.nodes;
    let (range, root) = match section {
        Some(id) => {
            let sec = Section::resolve(index, id)?;
            let r: usize = sec.id.get(1..).and_then(|n| n.parse().ok()).unwrap_or(1) - 1;
            let level = nodes.get(r).map_or(0, |n| n.level);
            let end = nodes
                .iter()
                .enumerate()
                .skip(r + 1)
                .find(|(_, n)| n.level <= level)
                .map_or(nodes.len(), |(i, _)| i);
            ((r + 1)..end, Some(sec))
        }
        None => (0..nodes.len(), None),
    };
    let base_level = nodes
        .get(range.clone())
        .unwrap_or(&[])
        .iter()
        .map(|n| n.level)
        .min()
        .unwrap_or(1);
    let rows = sheet_rows(index);
    let list: Vec<OutlineNode<'a>> = range
        .clone()
        .filter_map(|i| {
            let node = nodes.get(i)?;
            let descendants = nodes
                .iter()
                .skip(i + 1)
                .take(range.end.saturating_sub(i + 1))
                .take_while(|n| n.level > node.level)
                .count();
            Some(OutlineNode {
                i,
                depth: node.level.saturating_sub(base_level) + 1,
                node,
                descendants,
                rows: (node.kind == "sheet")
                    .then(|| rows.get(&node.title).copied())
                    .flatten(),
            })
        })
        .collect();
    Ok((list, root))
}

fn node_value(n: &OutlineNode<'_>, hidden: usize) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(format!("s{}", n.i + 1)));
    if n.node.kind != "section" {
        m.insert("kind".into(), json!(n.node.kind));
    }
    m.insert("title".into(), json!(n.node.title));
    m.insert("level".into(), json!(n.node.level));
    if let Some((a, b)) = n.node.pages {
        m.insert("pages".into(), json!([a, b]));
    }
    if let Some(r) = n.rows {
        m.insert("rows".into(), json!(r));
    }
    if hidden > 0 {
        m.insert("hidden".into(), json!(hidden));
    }
    Value::Object(m)
}

/// The entries down to `depth`, each with the count of deeper entries it hides.
fn to_depth(nodes: &[OutlineNode<'_>], depth: u32) -> Vec<Value> {
    nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.depth <= depth)
        .map(|(k, n)| {
            let hidden = if n.depth == depth {
                n.descendants
            } else {
                // Descendants deeper than `depth`.
                nodes
                    .iter()
                    .skip(k + 1)
                    .take(n.descendants)
                    .filter(|d| d.depth > depth)
                    .count()
            };
            node_value(n, hidden)
        })
        .collect()
}

/// As many outline levels as fit with `base`; the top level paged if even it does not fit.
fn summarise(base: &Map<String, Value>, nodes: &[OutlineNode<'_>], budget: Budget) -> Outline {
    let max_depth = nodes.iter().map(|n| n.depth).max().unwrap_or(0);
    let fits = |list: &Vec<Value>| {
        let mut a = base.clone();
        a.insert("outline".into(), Value::Array(list.clone()));
        budget.fits(&a)
    };
    let mut best: Option<Vec<Value>> = None;
    for depth in 1..=max_depth {
        let list = to_depth(nodes, depth);
        if fits(&list) {
            best = Some(list);
        } else {
            break;
        }
    }
    match best {
        Some(list) => Outline::Whole(list),
        None if nodes.is_empty() => Outline::Whole(Vec::new()),
        None => Outline::Paged(to_depth(nodes, 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sets_and_labels_compress_to_runs() {
        assert_eq!(ranges([1, 2, 3, 7, 9, 10, 11, 12]), "1-3, 7, 9-12");
        assert_eq!(ranges([]), "");
        let pages: Vec<PageInfo> = (1..=20)
            .map(|p| PageInfo {
                page: p,
                label: Some(if p <= 4 {
                    ["i", "ii", "iii", "iv"][p as usize - 1].to_string()
                } else {
                    (p - 4).to_string()
                }),
                ..PageInfo::default()
            })
            .collect();
        assert_eq!(
            label_runs(&pages),
            vec![
                json!({"pages": "1-4", "labels": "i-iv"}),
                json!({"pages": "5-20", "labels": "1-16"})
            ]
        );
        assert_eq!(label_number("A-3"), Some(("A-".into(), 3, 0)));
        assert_eq!(label_number("xiv"), Some((String::new(), 14, 1)));
    }
}
