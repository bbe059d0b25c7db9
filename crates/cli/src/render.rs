//! Tool answers for a reader: search hits with score and locator, a container's members as a
//! table, a document's outline indented by level, objects and sections with their locators
//! then their text; always what was left out (`more`) and the command that continues.
//! The answer's fields are docs/TOOLS.md's; fields an answer lacks are left out here too.

use std::io::Write;

use ingest::tools::ToolCall;
use serde_json::Value;

use crate::output::{field, human_size, Paint};

/// Print `answer` (a tool's JSON answer, not an error) for `call`. `continue_with` makes
/// the command line that continues with a cursor.
pub(crate) fn answer(
    out: &mut impl Write,
    call: &ToolCall,
    answer: &Value,
    continue_with: &dyn Fn(&str) -> String,
    paint: &Paint,
) -> anyhow::Result<()> {
    if let Some(extracted) = answer.get("extracted") {
        writeln!(
            out,
            "extracted: {}{}{}",
            text(extracted, "/status").unwrap_or("?"),
            number(extracted, "/chunks")
                .map(|c| format!(", {c} chunks"))
                .unwrap_or_default(),
            text(extracted, "/reason")
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )?;
    }
    if answer.get("hits").is_some() {
        hits(out, answer, paint)?;
    } else if answer.get("members").is_some() {
        members(out, answer)?;
    } else if text(answer, "/kind") == Some("document") {
        document(out, answer)?;
    } else if answer.get("objects").is_some() {
        objects(out, answer)?;
    } else if answer.get("sources").is_some() {
        sources(out, answer)?;
    } else if answer.get("entries").is_some() {
        source_entries(out, answer)?;
    } else if matches!(call, ToolCall::VerifyQuote(_)) {
        quote(out, answer)?;
    } else if matches!(call, ToolCall::RenderPage(_)) {
        writeln!(
            out,
            "{}: {}x{} PNG, {}{}{}",
            text(answer, "/locator").unwrap_or("?"),
            field(answer, "/width"),
            field(answer, "/height"),
            human_size(number(answer, "/bytes").unwrap_or(0)),
            number(answer, "/dpi")
                .map(|d| format!(", {d} dpi"))
                .unwrap_or_default(),
            text(answer, "/note")
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        )?;
    } else if matches!(call, ToolCall::ReadSection(_)) || answer.get("section").is_some() {
        section(out, answer)?;
    } else {
        writeln!(out, "{}", serde_json::to_string_pretty(answer)?)?;
    }
    if let Some(more) = text(answer, "/more") {
        writeln!(out, "\nmore: {more}")?;
    }
    if let Some(cursor) = text(answer, "/cursor") {
        if answer.get("more").is_none() {
            writeln!(out)?;
        }
        writeln!(out, "continue: {}", continue_with(cursor))?;
    }
    Ok(())
}

/// A `verify_quote` answer: each place with its sentence, or the closest passage.
fn quote(out: &mut impl Write, answer: &Value) -> anyhow::Result<()> {
    if answer.get("found") == Some(&Value::Bool(true)) {
        let places = field(answer, "/matches")
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        writeln!(
            out,
            "found {} time(s) in {}",
            field(answer, "/match_count"),
            text(answer, "/locator").unwrap_or_default()
        )?;
        for m in places {
            writeln!(out, "\n{}", text(m, "/locator").unwrap_or_default())?;
            if let Some(s) = text(m, "/sentence") {
                writeln!(out, "  {s}")?;
            }
            page_boxes(out, m, "  ")?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "not found in {}",
        text(answer, "/locator").unwrap_or_default()
    )?;
    if let Some(c) = answer.get("closest") {
        writeln!(
            out,
            "closest ({}, score {}):\n  {}",
            text(c, "/locator").unwrap_or_default(),
            field(c, "/score"),
            text(c, "/text").unwrap_or_default()
        )?;
    }
    Ok(())
}

fn hits(out: &mut impl Write, answer: &Value, paint: &Paint) -> anyhow::Result<()> {
    let hits = field(answer, "/hits")
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    // Only weak hits: said first, so that a person reads them as such.
    if let Some(note) = text(answer, "/note").filter(|_| !hits.is_empty()) {
        writeln!(out, "{}", paint.quiet(note))?;
    }
    for (i, hit) in hits.iter().enumerate() {
        let score = field(hit, "/score").as_f64().unwrap_or(0.0);
        let weak = match text(hit, "/confidence") {
            Some("low") => format!("  {}", paint.quiet("(low confidence)")),
            _ => String::new(),
        };
        writeln!(
            out,
            "{}. {}  {}{weak}",
            i + 1,
            paint.strong(&format!("{score:.3}")),
            paint.locator(text(hit, "/locator").unwrap_or("?"))
        )?;
        let mut about = Vec::new();
        if let Some(section) = text(hit, "/section") {
            about.push(format!("§ {section}"));
        }
        if let Some(label) = text(hit, "/label") {
            about.push(label.to_string());
        }
        if let Some(kind) = text(hit, "/type").filter(|t| *t != "text") {
            about.push(kind.to_string());
        }
        if !about.is_empty() {
            writeln!(out, "   {}", paint.quiet(&about.join(" · ")))?;
        }
        if let Some(snippet) = text(hit, "/snippet") {
            writeln!(out, "   {}", one_line(snippet))?;
        }
        let also: Vec<&str> = field(hit, "/also_in")
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !also.is_empty() {
            writeln!(out, "   also in: {}", also.join(", "))?;
        }
        page_boxes(out, hit, "   ")?;
    }
    if hits.is_empty() {
        writeln!(out, "{}", text(answer, "/note").unwrap_or("no hits"))?;
    }
    Ok(())
}

fn sources(out: &mut impl Write, answer: &Value) -> anyhow::Result<()> {
    let sources = field(answer, "/sources")
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if sources.is_empty() {
        writeln!(out, "{}", text(answer, "/note").unwrap_or("no sources"))?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<20} {:<8} {:>7} {:<6}  LOCATOR",
        "NAME", "PROVIDER", "INDEXED", "SYNCED"
    )?;
    for s in sources {
        let owner = text(s, "/owner")
            .map(|o| format!("  ({o})"))
            .unwrap_or_default();
        writeln!(
            out,
            "{:<20} {:<8} {:>7} {:<6}  {}{owner}",
            text(s, "/name").unwrap_or("?"),
            text(s, "/provider").unwrap_or("?"),
            number(s, "/indexed_files").unwrap_or(0),
            if field(s, "/synced").as_bool() == Some(true) {
                "yes"
            } else {
                "no"
            },
            text(s, "/locator").unwrap_or("?"),
        )?;
    }
    Ok(())
}

fn source_entries(out: &mut impl Write, answer: &Value) -> anyhow::Result<()> {
    let entries = field(answer, "/entries")
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    writeln!(out, "{}", text(answer, "/locator").unwrap_or("?"))?;
    if let Some(note) = text(answer, "/note").or(text(answer, "/truncated")) {
        writeln!(out, "{note}")?;
    }
    for e in entries {
        let size = number(e, "/size").map_or("-".into(), human_size);
        writeln!(
            out,
            "{:>10}  {:<22}  {}",
            size,
            text(e, "/indexed").unwrap_or(""),
            text(e, "/name").unwrap_or("?")
        )?;
    }
    Ok(())
}

fn members(out: &mut impl Write, answer: &Value) -> anyhow::Result<()> {
    let members = field(answer, "/members")
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let kind = text(answer, "/kind").unwrap_or("container");
    let place = text(answer, "/locator").filter(|l| !l.is_empty());
    writeln!(
        out,
        "{}  ({kind}, {} entries)",
        place.unwrap_or("(top level)"),
        number(answer, "/total").unwrap_or(members.len() as u64)
    )?;
    writeln!(
        out,
        "{:<8} {:<9} {:>6} {:>10}  LOCATOR",
        "KIND", "STATUS", "CHUNKS", "SIZE"
    )?;
    for m in members {
        let kind = text(m, "/kind").unwrap_or("?");
        let status = text(m, "/status").unwrap_or("-");
        let chunks = number(m, "/chunks").map_or("-".into(), |c| c.to_string());
        let size = number(m, "/bytes").map_or("-".into(), human_size);
        let locator = text(m, "/locator").or(text(m, "/name")).unwrap_or("?");
        let mut notes = Vec::new();
        if let Some(n) = number(m, "/members") {
            notes.push(format!("{n} entries"));
        }
        if let Some(t) = text(m, "/type") {
            notes.push(t.to_string());
        }
        if let Some(r) = text(m, "/reason") {
            notes.push(r.to_string());
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!("  ({})", notes.join(", "))
        };
        writeln!(
            out,
            "{kind:<8} {status:<9} {chunks:>6} {size:>10}  {locator}{notes}"
        )?;
    }
    Ok(())
}

fn document(out: &mut impl Write, answer: &Value) -> anyhow::Result<()> {
    let mut about = Vec::new();
    if let Some(t) = text(answer, "/type") {
        about.push(t.to_string());
    }
    if let Some(s) = number(answer, "/bytes") {
        about.push(human_size(s));
    }
    if let Some(s) = text(answer, "/status") {
        about.push(s.to_string());
    }
    if let Some(c) = number(answer, "/chunks") {
        about.push(format!("{c} chunks"));
    }
    if let Some(p) = number(answer, "/pages") {
        about.push(format!("{p} pages"));
    }
    writeln!(
        out,
        "{}  ({})",
        text(answer, "/locator").unwrap_or("?"),
        about.join(", ")
    )?;
    if let Some(labels) = field(answer, "/page_labels").as_array() {
        let labels: Vec<String> = labels
            .iter()
            .map(|l| {
                format!(
                    "{} → {}",
                    text(l, "/pages").unwrap_or("?"),
                    text(l, "/labels").unwrap_or("?")
                )
            })
            .collect();
        writeln!(out, "page labels: {}", labels.join(", "))?;
    }
    for (key, what) in [
        ("/pages_with_images", "pages with images"),
        ("/pages_with_tables", "pages with tables"),
        ("/pages_without_text", "pages without text"),
    ] {
        if let Some(pages) = text(answer, key) {
            writeln!(out, "{what}: {pages}")?;
        }
    }
    if let Some(objects) = field(answer, "/objects").as_object() {
        let counts: Vec<String> = objects.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(out, "objects: {}", counts.join(", "))?;
    }
    if let Some(outline) = field(answer, "/outline").as_array() {
        match number(answer, "/outline_total") {
            Some(total) => writeln!(out, "outline ({total} entries):")?,
            None => writeln!(out, "outline:")?,
        }
        for entry in outline {
            outline_entry(out, entry)?;
        }
    }
    Ok(())
}

fn outline_entry(out: &mut impl Write, e: &Value) -> anyhow::Result<()> {
    let level = number(e, "/level").unwrap_or(1).clamp(1, 12);
    let indent = "  ".repeat(usize::try_from(level).unwrap_or(1));
    let mut line = format!("{indent}{}  ", text(e, "/id").unwrap_or("?"));
    if let Some(kind) = text(e, "/kind") {
        line.push_str(&format!("[{kind}] "));
    }
    line.push_str(text(e, "/title").unwrap_or(""));
    if let Some(pages) = field(e, "/pages").as_array() {
        let pages: Vec<String> = pages.iter().map(Value::to_string).collect();
        match pages.as_slice() {
            [a, b] if a == b => line.push_str(&format!("  p. {a}")),
            [a, b] => line.push_str(&format!("  p. {a}-{b}")),
            _ => {}
        }
    }
    if let (Some(rows), Some(columns)) = (number(e, "/rows"), number(e, "/columns")) {
        line.push_str(&format!("  {rows} rows × {columns} columns"));
    }
    if let Some(hidden) = number(e, "/hidden").filter(|h| *h > 0) {
        line.push_str(&format!(
            "  (+{hidden} hidden: --section {})",
            text(e, "/id").unwrap_or("?")
        ));
    }
    writeln!(out, "{line}")?;
    Ok(())
}

fn objects(out: &mut impl Write, answer: &Value) -> anyhow::Result<()> {
    let objects = field(answer, "/objects")
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let total = number(answer, "/total").unwrap_or(objects.len() as u64);
    writeln!(
        out,
        "{}  ({total} {} selected)",
        text(answer, "/locator").unwrap_or("?"),
        if total == 1 { "object" } else { "objects" }
    )?;
    for o in objects {
        let mut about = vec![text(o, "/type").unwrap_or("?").to_string()];
        if let Some(label) = text(o, "/label") {
            about.push(label.to_string());
        }
        if let Some(section) = text(o, "/section") {
            about.push(format!("§ {section}"));
        }
        about.push(piece(o));
        if let Some(meta) = o.get("meta") {
            about.push(meta.to_string());
        }
        if o.get("hit") == Some(&Value::Bool(true)) {
            about.push("the hit".into());
        }
        writeln!(
            out,
            "\n── [{}] {}  ({})",
            field(o, "/n"),
            text(o, "/locator").unwrap_or("?"),
            about.join(", ")
        )?;
        if let Some(t) = text(o, "/text").filter(|t| !t.is_empty()) {
            writeln!(out, "{t}")?;
        }
        if let Some(p) = o.get("positions") {
            positions(out, p)?;
        }
    }
    // Around a hit: the commands that read on either way.
    for way in ["earlier", "later"] {
        if let Some(next) = answer.get(way) {
            writeln!(
                out,
                "\n{way}: ingest read '{}' --around --before {} --after {}",
                text(next, "/around")
                    .unwrap_or_default()
                    .replace('\'', "'\\''"),
                field(next, "/before"),
                field(next, "/after")
            )?;
        }
    }
    Ok(())
}

/// An object's positions: the system, then a box per line with its chars.
fn positions(out: &mut impl Write, p: &Value) -> anyhow::Result<()> {
    let size = p
        .get("page_size")
        .map(|s| format!(", page {}x{}", field(s, "/0"), field(s, "/1")))
        .unwrap_or_default();
    writeln!(
        out,
        "positions ({}, origin {}{size}){}",
        text(p, "/unit").unwrap_or("?"),
        text(p, "/origin").unwrap_or("?"),
        p.get("box")
            .map(|b| format!(": box {}", boxed(b)))
            .unwrap_or_default()
    )?;
    for l in p
        .get("lines")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        writeln!(
            out,
            "  {}  chars {}-{}",
            boxed(field(l, "/box")),
            field(l, "/start"),
            field(l, "/end")
        )?;
    }
    Ok(())
}

/// The `boxes` of a hit or a quote's place, a line each.
fn page_boxes(out: &mut impl Write, v: &Value, indent: &str) -> anyhow::Result<()> {
    for b in v
        .get("boxes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        writeln!(
            out,
            "{indent}page {} box {}",
            field(b, "/page"),
            boxed(field(b, "/box"))
        )?;
    }
    Ok(())
}

/// `[x0, y0, x1, y1]` as `x0 y0 x1 y1`.
fn boxed(b: &Value) -> String {
    b.as_array().map_or_else(String::new, |v| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn section(out: &mut impl Write, answer: &Value) -> anyhow::Result<()> {
    let s = field(answer, "/section");
    let mut head = format!(
        "{}  § {} {}",
        text(answer, "/locator").unwrap_or("?"),
        text(s, "/id").unwrap_or("?"),
        text(s, "/title").unwrap_or("")
    );
    if let Some(pages) = field(s, "/pages").as_array() {
        let pages: Vec<String> = pages.iter().map(Value::to_string).collect();
        head.push_str(&format!("  (pages {})", pages.join("-")));
    }
    writeln!(out, "{head}  [{}]\n", piece(answer))?;
    if let Some(t) = text(answer, "/text") {
        writeln!(out, "{t}")?;
    }
    Ok(())
}

/// `N chars`, and which part of them this piece is when it is not all.
fn piece(v: &Value) -> String {
    let mut s = format!("{} chars", field(v, "/chars"));
    if let (Some(offset), Some(end)) = (number(v, "/offset"), number(v, "/end")) {
        s.push_str(&format!(", {offset}-{end}"));
    }
    if let Some(omitted) = field(v, "/omitted").as_array() {
        let range: Vec<String> = omitted.iter().map(Value::to_string).collect();
        s.push_str(&format!(", {} omitted", range.join("-")));
    }
    s
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    field(v, pointer).as_str()
}

fn number(v: &Value, pointer: &str) -> Option<u64> {
    field(v, pointer).as_u64()
}

/// `text` on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(call: &ToolCall, v: Value) -> String {
        let mut out = Vec::new();
        answer(
            &mut out,
            call,
            &v,
            &|c| format!("ingest browse --cursor {c}"),
            &Paint::none(),
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn browse() -> ToolCall {
        ToolCall::BrowseContainer(Default::default())
    }

    #[test]
    fn a_container_is_a_table_with_the_way_to_continue() {
        let s = render(
            &browse(),
            json!({"locator": "/d/bundle.zip", "kind": "archive", "total": 3, "members": [
                {"name": "docs/inner.tar.gz", "locator": "/d/bundle.zip!/docs/inner.tar.gz", "kind": "archive", "members": 2},
                {"name": "README.txt", "locator": "/d/bundle.zip!/README.txt", "kind": "file",
                 "type": "text/plain", "bytes": 115, "status": "indexed", "chunks": 1}],
             "cursor": "c1", "more": "1 more member", "size": {"chars": 10, "tokens": 3}}),
        );
        assert!(s.contains("/d/bundle.zip  (archive, 3 entries)"), "{s}");
        assert!(
            s.contains("/d/bundle.zip!/docs/inner.tar.gz  (2 entries)"),
            "{s}"
        );
        assert!(
            s.contains("indexed        1      115 B  /d/bundle.zip!/README.txt  (text/plain)"),
            "{s}"
        );
        assert!(s.contains("more: 1 more member"), "{s}");
        assert!(s.contains("continue: ingest browse --cursor c1"), "{s}");
    }

    #[test]
    fn an_outline_is_indented_by_level_with_ids_and_pages() {
        let s = render(
            &browse(),
            json!({"locator": "/d/a.pdf", "kind": "document", "type": "application/pdf",
                   "pages": 100, "outline": [
                {"id": "s1", "title": "1 Introduction", "level": 1, "pages": [1, 40], "hidden": 3},
                {"id": "s2", "title": "1.1 Scope", "level": 2, "pages": [2, 2]},
                {"id": "s3", "kind": "sheet", "title": "Budget", "rows": 40, "columns": 6}],
                   "outline_total": 3}),
        );
        assert!(
            s.contains("  s1  1 Introduction  p. 1-40  (+3 hidden: --section s1)"),
            "{s}"
        );
        assert!(s.contains("\n    s2  1.1 Scope  p. 2\n"), "{s}");
        assert!(s.contains("s3  [sheet] Budget  40 rows × 6 columns"), "{s}");
        assert!(!s.contains("continue:"), "{s}");
    }

    #[test]
    fn hits_show_score_locator_and_snippet() {
        let call = ToolCall::SearchDocuments(Default::default());
        let s = render(
            &call,
            json!({"query": "q", "hits": [{"locator": "/d/a.pdf#page=3", "score": 0.6123,
                   "file": "a.pdf", "type": "text", "section": "2 Setup", "snippet": "a\nb"}]}),
        );
        assert!(
            s.starts_with("1. 0.612  /d/a.pdf#page=3\n   § 2 Setup\n   a b\n"),
            "{s}"
        );
    }
}
