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
pub fn parse_range(what: &str, s: &str) -> Result<(u64, u64), ToolError> {
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
    /// Lines and paragraphs asked by the locator's fragment (`#line=`, `#para=`).
    lines: Option<(u64, u64)>,
    paras: Option<(u64, u64)>,
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
            && overlaps(self.lines, &o.fragment, |f| f.lines)
            && overlaps(self.paras, &o.fragment, |f| f.paras)
            && self.slide.is_none_or(|n| o.slide == Some(n))
    }

    /// The range this read asks of object `o`'s text, when it asks one: rows or lines (by
    /// `rows` or the fragment's `line=`), or paragraphs.
    fn asked_of(&self, o: &PackedObject) -> Option<Asked> {
        let f = o.fragment.parse::<extractors::Fragment>().ok()?;
        if let (Some(asked), Some(held)) = (self.paras, f.paras) {
            return Some(Asked::Paras { asked, held });
        }
        let asked = self.rows.or(self.lines)?;
        let held = f.rows.or(f.lines)?;
        Some(Asked::Lines {
            asked,
            held,
            rows: f.rows.is_some(),
        })
    }
}

/// Whether `o`'s fragment range (picked by `range`) overlaps `asked`, when asked.
fn overlaps(
    asked: Option<(u64, u64)>,
    fragment: &str,
    range: impl Fn(&extractors::Fragment) -> Option<(u64, u64)>,
) -> bool {
    asked.is_none_or(|(a, b)| {
        fragment
            .parse::<extractors::Fragment>()
            .ok()
            .and_then(|f| range(&f))
            .is_some_and(|(x, y)| x <= b && a <= y)
    })
}

/// A range a read asks of an object that holds a wider one.
#[derive(Debug, Clone, Copy)]
enum Asked {
    /// Rows of a table (after its header lines) or lines of a text, one text line each.
    Lines {
        asked: (u64, u64),
        held: (u64, u64),
        rows: bool,
    },
    /// Paragraphs, separated by a blank line in the object's text.
    Paras { asked: (u64, u64), held: (u64, u64) },
}

/// Exactly the asked part of object `o`'s `text`, when the object holds more than was asked
/// and its text maps line by line (paragraph by paragraph) onto its range: a table keeps its
/// header lines (the column names), then the asked rows. The part's range, or `None` (the
/// whole text stands) when the text does not map so.
fn narrowed(text: &str, o: &PackedObject, asked: Asked) -> Option<(String, (u64, u64))> {
    let ((a, b), (x, y)) = match asked {
        Asked::Lines { asked, held, .. } | Asked::Paras { asked, held } => (asked, held),
    };
    let (from, to) = (a.max(x), b.min(y));
    if from > to || (from, to) == (x, y) {
        return None;
    }
    let take = |units: &[&str], header: usize, sep: &str| -> Option<String> {
        let want = usize::try_from(y - x + 1).ok()?;
        if units.len() != header + want {
            return None; // the text does not map one unit to one row, line or paragraph
        }
        let skip = usize::try_from(from - x).ok()?;
        let n = usize::try_from(to - from + 1).ok()?;
        let head = units.get(..header)?;
        let body = units.get(header + skip..header + skip + n)?;
        Some(
            head.iter()
                .chain(body)
                .copied()
                .collect::<Vec<_>>()
                .join(sep),
        )
    };
    let part = match asked {
        Asked::Lines { rows, .. } => {
            let trimmed = text.strip_suffix('\n').unwrap_or(text);
            let lines: Vec<&str> = trimmed.split('\n').collect();
            let header = if rows {
                o.meta
                    .get("header_lines")
                    .and_then(Value::as_u64)
                    .and_then(|h| usize::try_from(h).ok())
                    .unwrap_or(0)
            } else {
                0
            };
            let mut part = take(&lines, header, "\n")?;
            if trimmed.len() < text.len() {
                part.push('\n');
            }
            part
        }
        // Paragraphs apart by a blank line, or one a line (a document's flow).
        Asked::Paras { .. } => {
            let trimmed = text.trim_end();
            let paras: Vec<&str> = trimmed.split("\n\n").collect();
            match take(&paras, 0, "\n\n") {
                Some(part) => part,
                None => {
                    let lines: Vec<&str> = trimmed.split('\n').collect();
                    take(&lines, 0, "\n")?
                }
            }
        }
    };
    Some((part, (from, to)))
}

/// The objects `before` and `after` read around a hit by default, and the most they may ask.
const DEFAULT_AROUND_OBJECTS: usize = 2;
const DEFAULT_AROUND_CHARS: usize = 2000;
const MAX_AROUND_OBJECTS: usize = 100;
const MAX_AROUND_CHARS: usize = 100_000;

/// What an `around` read asks: the hit's place and how far to read on each side.
struct Around {
    at: extractors::Fragment,
    before: usize,
    after: usize,
    /// `before` and `after` count chars of text (whole objects), not objects.
    by_chars: bool,
}

impl Around {
    /// The `around` arguments of a read of the file at `file`, checked; `None` without them.
    fn of(args: &ReadArgs, file: &str) -> Result<Option<Around>, ToolError> {
        let Some(around) = args.around.as_deref().map(str::trim) else {
            if args.before.is_some() || args.after.is_some() || args.unit.is_some() {
                return Err(ToolError::Invalid(
                    "before, after and unit go with around: the locator of a search hit to \
                     read around"
                        .into(),
                ));
            }
            return Ok(None);
        };
        let shown: String = around.chars().take(200).collect();
        let (at_file, fragment) = around.split_once('#').unwrap_or(("", around));
        if !at_file.is_empty() && view::normalize(at_file) != file {
            return Err(ToolError::Invalid(format!(
                "around {shown:?} is in another file than {file}: give that hit's own file as locator"
            )));
        }
        let at: extractors::Fragment = fragment.parse().map_err(|e| {
            ToolError::Invalid(format!(
                "around {shown:?}: {e}; give a search hit's locator such as report.pdf#page=12"
            ))
        })?;
        if at.is_empty() {
            return Err(ToolError::Invalid(
                "around needs a place: a search hit's locator with its #fragment (page=, line=, \
                 rows=, slide=, para=)"
                    .into(),
            ));
        }
        let (by_chars, default, max) = match args.unit.as_deref().map(str::trim) {
            None | Some("objects") => (false, DEFAULT_AROUND_OBJECTS, MAX_AROUND_OBJECTS),
            Some("chars") => (true, DEFAULT_AROUND_CHARS, MAX_AROUND_CHARS),
            Some(other) => {
                let other: String = other.chars().take(40).collect();
                return Err(ToolError::Invalid(format!(
                    "unit must be objects or chars, not {other:?}"
                )));
            }
        };
        for (name, n) in [("before", args.before), ("after", args.after)] {
            if n.is_some_and(|n| n > max) {
                return Err(ToolError::Invalid(format!(
                    "{name} may be at most {max} {}",
                    if by_chars { "chars" } else { "objects" }
                )));
            }
        }
        Ok(Some(Around {
            at,
            before: args.before.unwrap_or(default),
            after: args.after.unwrap_or(default),
            by_chars,
        }))
    }

    /// The window of `selected` (indexes into `objects`) around the first object holding the
    /// hit: its first and last position in `selected`, and the hit's; `None` when no
    /// selected object holds it.
    fn window(
        &self,
        selected: &[usize],
        objects: &[PackedObject],
    ) -> Option<(usize, usize, usize)> {
        let hit = first_holder(&self.at, selected, objects)?;
        let chars = |pos: usize| {
            selected
                .get(pos)
                .and_then(|&i| objects.get(i))
                .map_or(0, |o| usize::try_from(o.chars).unwrap_or(usize::MAX))
        };
        let last_pos = selected.len().saturating_sub(1);
        if !self.by_chars {
            return Some((
                hit.saturating_sub(self.before),
                hit.saturating_add(self.after).min(last_pos),
                hit,
            ));
        }
        let (mut first, mut taken) = (hit, 0usize);
        while first > 0 && taken < self.before {
            first -= 1;
            taken = taken.saturating_add(chars(first));
        }
        let (mut last, mut taken) = (hit, 0usize);
        while last < last_pos && taken < self.after {
            last += 1;
            taken = taken.saturating_add(chars(last));
        }
        Some((first, last, hit))
    }
}

/// Whether object `o` holds the place `at`: the same page, slide and sheet where `at` names
/// them, and lines, rows or paragraphs overlapping its.
fn holds(at: &extractors::Fragment, o: &PackedObject) -> bool {
    let of = o
        .fragment
        .parse::<extractors::Fragment>()
        .unwrap_or_default();
    let overlap = |hit: Option<(u64, u64)>, obj: Option<(u64, u64)>| {
        hit.is_none_or(|(a, b)| obj.is_some_and(|(x, y)| x <= b && a <= y))
    };
    at.page.is_none_or(|p| o.page == Some(p))
        && at.slide.is_none_or(|s| o.slide == Some(s))
        && at
            .sheet
            .as_ref()
            .is_none_or(|s| o.sheet.as_deref() == Some(s.as_str()))
        && overlap(at.lines, of.lines)
        && overlap(at.rows, of.rows)
        && overlap(at.paras, of.paras)
}

/// The position in `selected` (indexes into `objects`) of the first object holding `at`.
fn first_holder(
    at: &extractors::Fragment,
    selected: &[usize],
    objects: &[PackedObject],
) -> Option<usize> {
    selected
        .iter()
        .position(|&i| objects.get(i).is_some_and(|o| holds(at, o)))
}

/// The `#fragment` of a read's locator, parsed (empty without one).
fn locator_fragment(locator: &str) -> Result<extractors::Fragment, ToolError> {
    let (_, fragment) = extractors::split_fragment(locator.trim());
    if fragment.is_empty() {
        return Ok(extractors::Fragment::default());
    }
    fragment.parse().map_err(|e| {
        let shown: String = fragment.chars().take(200).collect();
        ToolError::Invalid(format!(
            "the locator's #{shown}: {e}; a fragment is page=, sheet=&rows=, line=, para= or slide="
        ))
    })
}

/// The locator of object `o` of the file at `file` (the file's when it has no fragment).
pub(super) fn object_locator(file: &str, o: &PackedObject) -> String {
    if o.fragment.is_empty() {
        file.to_string()
    } else {
        format!("{file}#{}", o.fragment)
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
    m.insert("locator".into(), json!(object_locator(file, o)));
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
    // The locator's own #fragment (a search hit's, copied as it is) asks what the filters
    // ask, where no argument said it already.
    let at = match args.around {
        Some(_) => extractors::Fragment::default(),
        None => locator_fragment(&args.locator)?,
    };
    let filter = Filter {
        pages: match args.pages.as_deref() {
            Some(p) => Some(parse_pages(p)?),
            None => at.page.map(|p| (p, p)),
        },
        section,
        content_type: args.content_type.as_deref().map(parse_type).transpose()?,
        sheet: args.sheet.clone().or(at.sheet),
        rows: rows.or(at.rows),
        lines: at.lines,
        paras: at.paras,
        slide: args.slide.or(at.slide),
    };
    let file = doc.entry.locator.clone();
    let around = Around::of(args, &file)?;
    let mut pack = view::pack(ingestor, &doc.hash)?;
    let mut selected: Vec<usize> = (0..pack.objects.len())
        .filter(|&i| pack.objects.get(i).is_some_and(|o| filter.matches(o)))
        .collect();
    let mut base = Map::new();
    base.insert("locator".into(), json!(file));
    doc.note_owner(&mut base, scope);
    // Around a hit: the window of the selection around the object holding it, and how to
    // read on either way.
    let mut hit_at = None;
    if let Some(around) = &around {
        let (first, last, hit) =
            around.window(&selected, &pack.objects).ok_or_else(|| {
                ToolError::Invalid(format!(
                "no object of {file} holds {} (with these filters): browse_container shows its \
                 pages, sections, sheets and slides",
                args.around.as_deref().unwrap_or_default().chars().take(200).collect::<String>()
            ))
            })?;
        // How to read on either way: the arguments of the next window. A place means the
        // first object holding it, which may lie inside this window (objects sharing a
        // page), so the counts are set for the next window to reach beyond this one.
        let place_at = |pos: usize| -> Option<(String, usize)> {
            let o = selected
                .get(pos)
                .and_then(|&i| pack.objects.get(i))
                .filter(|o| !o.fragment.is_empty())?;
            let at = o.fragment.parse::<extractors::Fragment>().ok()?;
            let holder = first_holder(&at, &selected, &pack.objects)?;
            Some((object_locator(&file, o), holder))
        };
        let step = |n: usize| {
            if around.by_chars {
                DEFAULT_AROUND_OBJECTS
            } else {
                n.max(1)
            }
        };
        if let Some((l, holder, pos)) = (0..first)
            .rev()
            .find_map(|pos| place_at(pos).map(|(l, h)| (l, h, pos)))
        {
            base.insert(
                "earlier".into(),
                json!({"around": l, "before": step(around.before),
                       "after": (pos - holder).min(MAX_AROUND_OBJECTS), "unit": "objects"}),
            );
        }
        if let Some((l, holder, pos)) =
            (last + 1..selected.len()).find_map(|pos| place_at(pos).map(|(l, h)| (l, h, pos)))
        {
            let after = (pos - holder + step(around.after) - 1).min(MAX_AROUND_OBJECTS);
            base.insert(
                "later".into(),
                json!({"around": l, "before": 0, "after": after, "unit": "objects"}),
            );
        }
        selected = selected.get(first..=last).unwrap_or_default().to_vec();
        hit_at = Some(hit - first);
    }
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
            let mut text = pack.text(i)?;
            let mut fields = pack
                .objects
                .get(i)
                .map(|o| object_fields(n, &file, o, level))
                .unwrap_or_default();
            // Exactly the rows, lines or paragraphs asked, when the object holds more.
            let part = pack.objects.get(i).and_then(|o| {
                let asked = filter.asked_of(o)?;
                let (part, (a, b)) = narrowed(&text, o, asked)?;
                Some((part, a, b, o, asked))
            });
            if let Some((part, a, b, o, asked)) = part {
                let (unit, key) = match asked {
                    Asked::Lines { rows: true, .. } => ("rows", "rows"),
                    Asked::Lines { rows: false, .. } => ("lines", "line"),
                    Asked::Paras { .. } => ("paragraphs", "para"),
                };
                let mut f = o
                    .fragment
                    .parse::<extractors::Fragment>()
                    .unwrap_or_default();
                match key {
                    "rows" => f.rows = Some((a, b)),
                    "line" => f.lines = Some((a, b)),
                    _ => f.paras = Some((a, b)),
                }
                if level == 1 {
                    fields.insert("at".into(), json!(f.to_string()));
                }
                if level == 0 {
                    fields.insert("locator".into(), json!(format!("{file}#{f}")));
                    fields.insert(
                        "part".into(),
                        json!(format!("{unit} {a}-{b} of this object's {}", o.fragment)),
                    );
                }
                fields.insert("chars".into(), json!(part.chars().count()));
                text = part;
            }
            if hit_at == Some(n) {
                fields.insert("hit".into(), Value::Bool(true));
            }
            if args.positions && level == 0 {
                if let Some(p) = pack.positions(i)? {
                    fields.insert("positions".into(), json!(p));
                }
            }
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
