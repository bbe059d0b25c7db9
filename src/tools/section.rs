//! `read_section`: the text of one section of a document, by the id `browse_container` shows
//! in its outline (`s12`), paged within the budget.
//!
//! Section ids are positions in the file's structure (`s1` is its first node), so they are
//! stable for a given content. What belongs to a section depends on the format: the pages it
//! spans (PDF), its sheet, its slide, or the objects under its heading path (documents with
//! headings).

use extractors::{FileContentIndex, Scope, StructureNode};
use serde_json::{json, Map, Value};

use super::budget::Budget;
use super::cursor;
use super::paging::{fill, first_fitting, mark_compact, Ctx, TextItem};
use super::view;
use super::{Finished, FullResult, SectionArgs, ToolError};
use crate::index::objects::PackedObject;
use crate::ingestor::Ingestor;

/// One section, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub id: String,
    pub node: StructureNode,
    rule: Rule,
}

#[derive(Debug, Clone)]
enum Rule {
    Pages(u32, u32),
    Sheet(String),
    Slide(u32),
    /// The heading path (` › `-joined titles of the node and its ancestors).
    Path(String),
}

/// The slide a node's locator names.
fn slide_of(locator: &str) -> Option<u32> {
    extractors::split_fragment(locator)
        .1
        .parse::<extractors::Fragment>()
        .ok()?
        .slide
}

/// The heading path of node `i`: the titles of its ancestors (by level) and its own.
pub(crate) fn path_of(nodes: &[StructureNode], i: usize) -> String {
    let Some(node) = nodes.get(i) else {
        return String::new();
    };
    let mut path = vec![node.title.as_str()];
    let mut level = node.level;
    for n in nodes.get(..i).unwrap_or(&[]).iter().rev() {
        if n.level < level && n.kind == node.kind {
            path.push(n.title.as_str());
            level = n.level;
        }
    }
    path.reverse();
    path.join(" › ")
}

impl Section {
    /// Section `id` (`s12`) of a file with structure `index`.
    pub fn resolve(index: &FileContentIndex, id: &str) -> Result<Section, ToolError> {
        let nodes = &index.structure.nodes;
        let bad = || {
            ToolError::Invalid(format!(
                "no section {id} in this file: section ids are s1..s{} as browse_container shows them",
                nodes.len()
            ))
        };
        let n: usize = id
            .trim()
            .strip_prefix('s')
            .and_then(|n| n.parse().ok())
            .ok_or_else(bad)?;
        let i = n.checked_sub(1).ok_or_else(bad)?;
        let node = nodes.get(i).ok_or_else(bad)?.clone();
        let rule = match (node.kind.as_str(), node.pages) {
            (_, Some((a, b))) => Rule::Pages(a, b),
            ("sheet", _) => Rule::Sheet(node.title.clone()),
            ("slide", _) => Rule::Slide(slide_of(&node.locator).unwrap_or(0)),
            _ => Rule::Path(path_of(nodes, i)),
        };
        Ok(Section {
            id: format!("s{n}"),
            node,
            rule,
        })
    }

    /// Whether object `o` belongs to the section.
    pub fn contains(&self, o: &PackedObject) -> bool {
        match &self.rule {
            Rule::Pages(a, b) => o.page.is_some_and(|p| (*a..=*b).contains(&p)),
            Rule::Sheet(s) => o.sheet.as_deref() == Some(s),
            Rule::Slide(n) => o.slide == Some(*n),
            Rule::Path(p) => o.section.as_deref().is_some_and(|s| {
                s == p
                    || s.strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with(" › "))
            }),
        }
    }

    /// The section as answers describe it.
    pub fn describe(&self) -> Value {
        let mut v = json!({ "id": self.id, "title": self.node.title });
        if let (Some(m), Some((a, b))) = (v.as_object_mut(), self.node.pages) {
            m.insert("pages".into(), json!([a, b]));
        }
        v
    }
}

/// The cursor tag of `read_section`.
const TAG: &str = "s";

/// Answer a `read_section` call.
pub(crate) fn read_section(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &SectionArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let digest = cursor::digest(args);
    let start = cursor::start(args.cursor.as_deref(), TAG, &digest)?;
    let doc = view::document(ingestor, scope, &args.locator, args.owner.as_deref())?;
    let index = view::content_index(ingestor, &doc.hash)?;
    let section = Section::resolve(&index, &args.section)?;
    let mut pack = view::pack(ingestor, &doc.hash)?;
    let mut parts = Vec::new();
    for i in 0..pack.objects.len() {
        let take = pack
            .objects
            .get(i)
            .is_some_and(|o| o.chars > 0 && section.contains(o));
        if take {
            parts.push(pack.text(i)?);
        }
    }
    tracing::info!(bytes_read = pack.bytes_read, "object pack read");
    let text = parts.join("\n\n");
    let full = FullResult::of([text.as_str()]);
    let chars: Vec<char> = text.chars().collect();
    let mut base = Map::new();
    base.insert("locator".into(), json!(doc.entry.locator));
    doc.note_owner(&mut base, scope);
    base.insert("section".into(), section.describe());
    base.insert("chars".into(), json!(chars.len()));
    if chars.is_empty() {
        base.insert("text".into(), json!(""));
        base.insert(
            "note".into(),
            json!("this section has no text (images only, or scanned pages)"),
        );
        let text = budget.finish(&base)?;
        return Ok(Finished { text, full });
    }
    let place = |base: &Map<String, Value>, pieces: &[Value]| {
        let mut a = base.clone();
        if let Some(Value::Object(p)) = pieces.first() {
            for (k, v) in p {
                a.insert(k.clone(), v.clone());
            }
        }
        a
    };
    let run = |level: u8| {
        let compact = level > 0;
        let mut base = base.clone();
        if compact {
            base.remove("locator");
            base.insert("section".into(), json!({ "id": section.id }));
            mark_compact(&mut base);
        }
        if level > 1 {
            base.remove("section");
            base.remove("chars");
        }
        let ctx = Ctx {
            budget,
            tag: TAG,
            digest: &digest,
            total: 1,
            unit: "The text",
            place: &place,
            compact,
        };
        fill(&ctx, &base, start, &mut |_| {
            Ok(TextItem {
                fields: Map::new(),
                chars: chars.clone(),
            })
        })
    };
    let filled = first_fitting(run)?;
    let text = budget.finish(&filled.answer)?;
    Ok(Finished { text, full })
}

impl Section {
    /// Narrow a search to this section.
    pub fn narrow(&self, f: &mut crate::index::SearchFilter) {
        match &self.rule {
            Rule::Pages(a, b) => f.pages = Some((*a, *b)),
            Rule::Sheet(s) => f.sheet = Some(s.clone()),
            Rule::Slide(n) => f.slide = Some(*n),
            Rule::Path(p) => f.section_path = Some(p.clone()),
        }
    }
}
