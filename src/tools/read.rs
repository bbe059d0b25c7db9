//! `read_content_objects`: the content objects of one file, filtered (pages, section, type,
//! sheet and rows, slide), in document order, paged within the budget. Texts come from the
//! content's object pack: only the directory and the selected objects' frames are read.

use extractors::{ContentType, Scope};
use serde_json::{json, Map, Value};

use super::budget::Budget;
use super::cursor;
use super::paging::{fill, first_fitting, mark_compact, Ctx, TextItem};
use super::section::Section;
use super::view;
use super::{Finished, FullResult, ReadArgs, ToolError};
use crate::index::objects::PackedObject;
use crate::ingestor::Ingestor;

/// The cursor tag of `read_content_objects`.
const TAG: &str = "r";

/// A 1-based inclusive range: `"47"` or `"40-47"`.
pub(crate) fn parse_range(what: &str, s: &str) -> Result<(u64, u64), ToolError> {
    // The locator's own rule, white space around the numbers allowed ("3 5" is no range).
    let s = s.trim();
    let canonical = match s.split_once('-') {
        Some((a, b)) => format!("{}-{}", a.trim(), b.trim()),
        None => s.to_string(),
    };
    extractors::parse_range(what, &canonical).map_err(|_| {
        ToolError::Invalid(format!(
            "{what} must be a number or a range such as \"47\" or \"40-47\" (1-based), not {s:?}"
        ))
    })
}

/// A page range argument.
pub(crate) fn parse_pages(s: &str) -> Result<(u32, u32), ToolError> {
    let (a, b) = parse_range("pages", s)?;
    Ok((
        u32::try_from(a).unwrap_or(u32::MAX),
        u32::try_from(b).unwrap_or(u32::MAX),
    ))
}

/// A content type argument.
pub(crate) fn parse_type(s: &str) -> Result<ContentType, ToolError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "text" => Ok(ContentType::Text),
        "image" => Ok(ContentType::Image),
        "videostream" | "video" => Ok(ContentType::Videostream),
        "audiostream" | "audio" => Ok(ContentType::Audiostream),
        "other" => Ok(ContentType::Other),
        _ => Err(ToolError::Invalid(format!(
            "content_type must be one of text, image, videostream, audiostream, other; not {s:?}"
        ))),
    }
}

/// The row range of a fragment, else its line range.
fn rows_or_lines(fragment: &str) -> Option<(u64, u64)> {
    let f = fragment.parse::<extractors::Fragment>().ok()?;
    f.rows.or(f.lines)
}

/// Which objects a read selects.
struct Filter {
    pages: Option<(u32, u32)>,
    section: Option<Section>,
    content_type: Option<ContentType>,
    sheet: Option<String>,
    rows: Option<(u64, u64)>,
    slide: Option<u32>,
}

impl Filter {
    fn matches(&self, o: &PackedObject) -> bool {
        self.pages
            .is_none_or(|(a, b)| o.page.is_some_and(|p| (a..=b).contains(&p)))
            && self.section.as_ref().is_none_or(|s| s.contains(o))
            && self.content_type.is_none_or(|t| o.content_type == t)
            && self
                .sheet
                .as_ref()
                .is_none_or(|s| o.sheet.as_deref() == Some(s.as_str()))
            && self.rows.is_none_or(|(a, b)| {
                rows_or_lines(&o.fragment).is_some_and(|(x, y)| x <= b && a <= y)
            })
            && self.slide.is_none_or(|n| o.slide == Some(n))
    }
}

/// The JSON fields of object `o` (number `n` in the selection) of the file at `file`; in
/// compact form (`level` 1) only its number and fragment (`at`), at `level` 2 its number.
fn object_fields(n: usize, file: &str, o: &PackedObject, level: u8) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("n".into(), json!(n));
    if level > 0 {
        if level == 1 && !o.fragment.is_empty() {
            m.insert("at".into(), json!(o.fragment));
        }
        return m;
    }
    let locator = if o.fragment.is_empty() {
        file.to_string()
    } else {
        format!("{file}#{}", o.fragment)
    };
    m.insert("locator".into(), json!(locator));
    m.insert("type".into(), json!(o.content_type.as_str()));
    if let Some(l) = &o.label {
        m.insert("label".into(), json!(l));
    }
    if let Some(s) = &o.section {
        m.insert("section".into(), json!(s));
    }
    m.insert("chars".into(), json!(o.chars));
    if o.content_type == ContentType::Text && o.meta.get("ocr") == Some(&Value::Bool(true)) {
        // Recognised from pixels: words may be misread.
        m.insert("ocr".into(), Value::Bool(true));
    }
    if o.content_type != ContentType::Text && !o.meta.is_empty() {
        m.insert("meta".into(), Value::Object(o.meta.clone()));
    }
    m
}

/// Answer a `read_content_objects` call.
pub(crate) fn read_content_objects(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &ReadArgs,
    budget: Budget,
) -> Result<Finished, ToolError> {
    let digest = cursor::digest(args);
    let start = cursor::start(args.cursor.as_deref(), TAG, &digest)?;
    let doc = view::document(ingestor, scope, &args.locator, args.owner.as_deref())?;
    let section = match &args.section {
        Some(id) => Some(Section::resolve(
            &view::content_index(ingestor, &doc.hash)?,
            id,
        )?),
        None => None,
    };
    let rows = match &args.rows {
        Some(r) => Some(parse_range("rows", r)?),
        None => None,
    };
    let filter = Filter {
        pages: args.pages.as_deref().map(parse_pages).transpose()?,
        section,
        content_type: args.content_type.as_deref().map(parse_type).transpose()?,
        sheet: args.sheet.clone(),
        rows,
        slide: args.slide,
    };
    let mut pack = view::pack(ingestor, &doc.hash)?;
    let selected: Vec<usize> = (0..pack.objects.len())
        .filter(|&i| pack.objects.get(i).is_some_and(|o| filter.matches(o)))
        .collect();
    let file = doc.entry.locator.clone();
    let mut base = Map::new();
    base.insert("locator".into(), json!(file));
    doc.note_owner(&mut base, scope);
    base.insert("total".into(), json!(selected.len()));
    if selected.is_empty() {
        base.insert("objects".into(), json!([]));
        base.insert(
            "note".into(),
            json!(format!(
                "no object of this file matches these filters (the file has {} objects; browse_container shows its pages, sections, sheets and slides)",
                pack.objects.len()
            )),
        );
        let text = budget.finish(&base)?;
        return Ok(Finished {
            text,
            full: FullResult::of([]),
        });
    }
    let place = |base: &Map<String, Value>, pieces: &[Value]| {
        let mut a = base.clone();
        a.insert("objects".into(), Value::Array(pieces.to_vec()));
        a
    };
    // The full result (every selected object), for the log: its size from the directory and
    // a hash naming the content and the selection.
    let mut id = blake3::Hasher::new();
    id.update(doc.hash.as_bytes());
    let mut full_bytes = 0u64;
    for &i in &selected {
        id.update(&(i as u64).to_le_bytes());
        full_bytes += pack.objects.get(i).map_or(0, |o| o.bytes);
    }
    let full = FullResult::new(full_bytes, &id);
    let run = |level: u8| {
        let compact = level > 0;
        let mut base = base.clone();
        if compact {
            base.remove("locator");
            base.remove("total");
            mark_compact(&mut base);
        }
        let ctx = Ctx {
            budget,
            tag: TAG,
            digest: &digest,
            total: selected.len(),
            unit: "object",
            place: &place,
            compact,
        };
        fill(&ctx, &base, start, &mut |n| {
            let i = selected.get(n).copied().unwrap_or(usize::MAX);
            let text = pack.text(i)?;
            let fields = pack
                .objects
                .get(i)
                .map(|o| object_fields(n, &file, o, level))
                .unwrap_or_default();
            Ok(TextItem {
                fields,
                chars: text.chars().collect(),
            })
        })
    };
    let filled = first_fitting(run)?;
    let text = budget.finish(&filled.answer)?;
    tracing::info!(bytes_read = pack.bytes_read, "object pack read");
    Ok(Finished { text, full })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_refuse_nonsense() {
        assert_eq!(parse_range("pages", "47").unwrap(), (47, 47));
        assert_eq!(parse_range("pages", " 40 - 47 ").unwrap(), (40, 47));
        assert!(parse_range("pages", "0").is_err());
        assert!(parse_range("pages", "9-3").is_err());
        assert!(parse_range("pages", "x").is_err());
        assert!(parse_range("pages", "3 5").is_err(), "not page 35");
        assert!(parse_range("pages", "1 0-4").is_err());
        assert_eq!(rows_or_lines("sheet=A&rows=2-40"), Some((2, 40)));
        assert_eq!(rows_or_lines("line=7"), Some((7, 7)));
        assert_eq!(rows_or_lines("page=3"), None);
    }
}
