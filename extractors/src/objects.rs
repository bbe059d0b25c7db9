//! Building content objects with stable ids and complete context references.

use serde_json::{Map, Value};

use crate::locator::{Fragment, Locator};
use crate::model::{ContentObject, ContentType, ContextRef};

/// Joins the titles of nested sections in a section path: `2 Installation › 2.3 Upgrading`.
pub const SECTION_SEPARATOR: &str = " › ";

/// Largest text object any extractor emits, in bytes. Longer text (a 100 MB line, a JSON
/// string, a CSV cell, a PDF page of garbage) is split into consecutive objects of at most
/// this size, so nothing downstream ever holds or tokenizes one huge string.
pub const MAX_TEXT_OBJECT_BYTES: usize = 16 * 1024;

/// Where to end a piece of at most `max` bytes taken from the start of `s`: `s.len()` when it
/// fits, else after the last line end in the second half of the window, else after its last
/// whitespace, else at the last char boundary. Never 0 for a non-empty `s` and `max >= 4`.
/// Scans at most `max` bytes, so cutting a whole text is linear in its length.
pub fn cut_point(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    let mut end = max.max(4);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    let window = s.get(..end).unwrap_or("");
    let floor = end / 2;
    if let Some(i) = window.rfind('\n').filter(|&i| i >= floor) {
        return i + 1;
    }
    window
        .char_indices()
        .rev()
        .take_while(|(i, _)| *i >= floor)
        .find(|(_, c)| c.is_whitespace())
        .map_or(end, |(i, c)| i + c.len_utf8())
}

/// Where a new object sits inside its file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Place {
    pub fragment: Fragment,
    pub label: Option<String>,
    pub section: Option<String>,
}

/// Accumulates the objects of one file, numbering them and deriving their ids.
pub(crate) struct ObjectSink<'a> {
    locator: &'a Locator,
    file_hash: &'a str,
    pub objects: Vec<ContentObject>,
}

impl<'a> ObjectSink<'a> {
    pub fn new(locator: &'a Locator, file_hash: &'a str) -> Self {
        ObjectSink {
            locator,
            file_hash,
            objects: Vec::new(),
        }
    }

    /// Add an object; `metadata` must be a JSON object (anything else is dropped). Text longer
    /// than [`MAX_TEXT_OBJECT_BYTES`] becomes several objects (see [`ObjectSink::push_split`]).
    pub fn push(&mut self, content_type: ContentType, data: String, place: Place, metadata: Value) {
        let metadata = match metadata {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if content_type == ContentType::Text && data.len() > MAX_TEXT_OBJECT_BYTES {
            self.push_split(&data, place, metadata);
        } else {
            self.push_one(content_type, data, place, metadata);
        }
    }

    /// [`ObjectSink::push`] for text borrowed from the source: an overlong text is split
    /// without first being copied whole.
    pub fn push_text(&mut self, data: &str, place: Place, metadata: Value) {
        if data.len() > MAX_TEXT_OBJECT_BYTES {
            let metadata = match metadata {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            self.push_split(data, place, metadata);
        } else {
            self.push(ContentType::Text, data.to_string(), place, metadata);
        }
    }

    /// Push overlong text as consecutive pieces of at most [`MAX_TEXT_OBJECT_BYTES`], cut at a
    /// line end or a space when there is one (see [`cut_point`]); each carries `"part": k`
    /// (1-based). A table (`header_lines` metadata) repeats its header in every piece and each
    /// piece names only its own rows; verbatim line-addressed text (`line_exact`) names only
    /// its own lines (the same line for every piece of one long line). Other fragments (page,
    /// slide, paragraphs) are kept as they are. Linear in the text's length.
    fn push_split(&mut self, data: &str, place: Place, metadata: Map<String, Value>) {
        let header_lines = metadata
            .get("header_lines")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let line_exact = metadata
            .get("line_exact")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let header_end = (0..header_lines).try_fold(0usize, |at, _| {
            data.get(at..)
                .and_then(|rest| rest.find('\n'))
                .map(|i| at + i + 1)
        });
        // A header that would leave less than half of a piece for the body is not repeated.
        let header_end = header_end.filter(|&h| h <= MAX_TEXT_OBJECT_BYTES / 2);
        let (header, body) = match header_end {
            Some(h) if header_lines > 0 => data.split_at(h),
            _ => ("", data),
        };
        let mut metadata = metadata;
        if header.is_empty() {
            metadata.remove("header_lines");
        }
        let room = MAX_TEXT_OBJECT_BYTES - header.len();
        // Lines (rows) of the body before the current piece.
        let mut lines_before = 0u64;
        let mut rest = body;
        let mut part = 0u64;
        while !rest.is_empty() {
            let cut = cut_point(rest, room);
            let (piece, tail) = rest.split_at(cut);
            rest = tail;
            part += 1;
            let inner = piece.trim_end_matches('\n').matches('\n').count() as u64;
            let (first, last) = (lines_before, lines_before + inner);
            lines_before += piece.matches('\n').count() as u64;
            let mut place = place.clone();
            if let (Some((a, b)), true) = (place.fragment.lines, line_exact && header.is_empty()) {
                let range = ((a + first).min(b), (a + last).min(b));
                place.fragment.lines = Some(range);
                place.label = Some(lines_label(range.0, range.1));
            } else if let (Some((a, b)), false) = (place.fragment.rows, header.is_empty()) {
                let range = ((a + first).min(b), (a + last).min(b));
                place.fragment.rows = Some(range);
                place.label = Some(format!("rows {}-{}", range.0, range.1));
            }
            let mut metadata = metadata.clone();
            metadata.insert("part".into(), part.into());
            self.push_one(
                ContentType::Text,
                format!("{header}{piece}"),
                place,
                metadata,
            );
        }
    }

    fn push_one(
        &mut self,
        content_type: ContentType,
        data: String,
        place: Place,
        metadata: Map<String, Value>,
    ) {
        let sequence = u32::try_from(self.objects.len()).unwrap_or(u32::MAX);
        let located = self.locator.with_fragment(place.fragment);
        let mut context_ref = ContextRef::at(&located);
        context_ref.label = place.label;
        context_ref.section_id = place.section;
        self.objects.push(ContentObject {
            id: self.id(sequence),
            file_id: self.file_hash.to_string(),
            content_type,
            data,
            context_ref,
            metadata,
            sequence,
            positions: None,
        });
    }
}

impl ObjectSink<'_> {
    fn id(&self, sequence: u32) -> String {
        let prefix = self.file_hash.get(..16).unwrap_or(self.file_hash);
        format!("{prefix}:{sequence}")
    }

    /// Add objects another extractor made for the same file, renumbered after ours.
    pub fn append(&mut self, objects: Vec<ContentObject>) {
        for mut o in objects {
            let sequence = u32::try_from(self.objects.len()).unwrap_or(u32::MAX);
            o.sequence = sequence;
            o.id = self.id(sequence);
            self.objects.push(o);
        }
    }
}

/// Longest section title kept, in bytes: a title is repeated in every object of its section
/// and in the structure, so a 30 MB "heading" must not be. Its text stays in the content.
pub(crate) const MAX_TITLE_BYTES: usize = 256;

/// `s` cut to at most [`MAX_TITLE_BYTES`] at a char boundary, with `…` when cut.
pub(crate) fn short_title(s: &str) -> String {
    if s.len() <= MAX_TITLE_BYTES {
        return s.to_string();
    }
    let mut end = MAX_TITLE_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", s.get(..end).unwrap_or("").trim_end())
}

/// A label for a line range: "lines 3-9".
pub(crate) fn lines_label(first: u64, last: u64) -> String {
    if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    }
}

#[cfg(test)]
mod tests {
    //! Huge objects: every extractor that can meet one hands on bounded pieces.

    use super::*;
    use crate::testing::extract_as;
    use crate::{Extraction, Locator};

    fn assert_bounded(e: &Extraction) {
        for o in &e.objects {
            assert!(
                o.data.len() <= MAX_TEXT_OBJECT_BYTES,
                "{} bytes at {}",
                o.data.len(),
                o.context_ref.location
            );
        }
    }

    fn lines_of(o: &ContentObject) -> (u64, u64) {
        let l: Locator = o.context_ref.location.parse().unwrap();
        l.fragment.lines.unwrap()
    }

    #[test]
    fn cut_points_prefer_line_ends_then_spaces_and_keep_chars_whole() {
        assert_eq!(cut_point("short", 10), 5);
        assert_eq!(cut_point("aaaaaa\nbb bbbbbbbb", 10), 7);
        assert_eq!(cut_point("aaaaaa bbbbbbbbbb", 10), 7);
        // A break in the first half would leave a tiny piece: not taken.
        assert_eq!(cut_point("aa\nbbbbbbbbbbbbbb", 10), 10);
        // No break in the second half: a hard cut, never inside a character.
        assert_eq!(cut_point("a bbbbbbbbbbbbb", 10), 10);
        let accents = "é".repeat(20);
        let cut = cut_point(&accents, 11);
        assert_eq!(cut, 10);
        assert!(accents.is_char_boundary(cut));
    }

    #[test]
    fn a_ten_megabyte_line_becomes_bounded_pieces_of_that_line() {
        let words: String = (0..2_200_000).map(|i| format!("w{} ", i % 977)).collect();
        let long = words.trim_end();
        assert!(long.len() > 10_000_000);
        let text = format!("intro\n{long}\nafter\n");
        let e = extract_as("big.txt", text.as_bytes(), None).unwrap();
        assert_bounded(&e);
        assert_eq!(e.objects.first().unwrap().data, "intro");
        assert_eq!(lines_of(&e.objects[0]), (1, 1));
        assert_eq!(e.objects.last().unwrap().data, "after");
        assert_eq!(lines_of(e.objects.last().unwrap()), (3, 3));
        let middle = &e.objects[1..e.objects.len() - 1];
        assert!(middle.len() > 600, "{}", middle.len());
        for (k, o) in middle.iter().enumerate() {
            assert_eq!(lines_of(o), (2, 2), "every piece names line 2");
            assert_eq!(o.metadata["part"], (k + 1) as u64);
        }
        let joined: String = middle.iter().map(|o| o.data.as_str()).collect();
        assert_eq!(joined, long);
        assert_eq!(e.structure.line_count, Some(3));
    }

    #[test]
    fn a_long_string_without_spaces_is_cut_at_char_boundaries() {
        let value = "ünïcödé".repeat(300_000);
        let json = format!("{{\"blob\":\"{value}\"}}");
        let e = extract_as("blob.json", json.as_bytes(), None).unwrap();
        assert_bounded(&e);
        assert!(e.objects.len() > 100);
        let joined: String = e.objects.iter().map(|o| o.data.as_str()).collect();
        assert_eq!(joined, json);
        assert!(e.objects.iter().all(|o| o.metadata["valid_json"] == true));
    }

    #[test]
    fn a_giant_csv_cell_is_split_under_its_header_and_row() {
        let cell = "lorem ipsum ".repeat(200_000);
        let csv = format!("id,text\n1,short\n2,{cell}\n3,tail\n");
        let e = extract_as("t.csv", csv.as_bytes(), None).unwrap();
        assert_bounded(&e);
        let rows: Vec<(u64, u64)> = e
            .objects
            .iter()
            .map(|o| {
                let l: Locator = o.context_ref.location.parse().unwrap();
                l.fragment.rows.unwrap()
            })
            .collect();
        assert!(rows.len() > 100, "{}", rows.len());
        // Row 2 shares its object with the start of row 3; row 4 comes after the cell.
        assert_eq!(rows.first(), Some(&(2, 3)));
        assert_eq!(rows.last(), Some(&(4, 4)));
        assert!(
            rows[1..rows.len() - 1].iter().all(|r| *r == (3, 3)),
            "{rows:?}"
        );
        for o in &e.objects {
            assert!(
                o.data.starts_with("| id | text |\n|---|---|\n"),
                "{}",
                &o.data[..40]
            );
        }
        let body: String = e
            .objects
            .iter()
            .map(|o| o.data.trim_start_matches("| id | text |\n|---|---|\n"))
            .collect();
        assert!(body.contains(cell.trim()));
    }

    #[test]
    fn a_giant_csv_header_is_not_repeated() {
        let head = "h".repeat(MAX_TEXT_OBJECT_BYTES * 3);
        let mut csv = format!("id,{head}\n");
        for i in 0..2000 {
            csv.push_str(&format!("{i},value {i}\n"));
        }
        let e = extract_as("h.csv", csv.as_bytes(), None).unwrap();
        assert_bounded(&e);
        let total: usize = e.objects.iter().map(|o| o.data.len()).sum();
        assert!(
            total < csv.len() * 2,
            "{total} bytes for a {} byte file",
            csv.len()
        );
        assert!(e
            .objects
            .last()
            .unwrap()
            .data
            .contains("| 1999 | value 1999 |"));
    }

    #[test]
    fn deep_html_and_a_huge_paragraph_stay_bounded() {
        let depth = 200_000;
        let html = format!(
            "<html><body><h1>{}Deep title{}</h1><div>{}core{}</div><p>{}</p></body></html>",
            "<span>".repeat(depth),
            "</span>".repeat(depth),
            "<div>".repeat(depth),
            "</div>".repeat(depth),
            "many words here ".repeat(100_000),
        );
        let e = extract_as("deep.html", html.as_bytes(), None).unwrap();
        assert_bounded(&e);
        assert_eq!(e.structure.nodes[0].title, "Deep title");
        let all: String = e.objects.iter().map(|o| o.data.as_str()).collect();
        assert!(all.contains("core"));
        assert!(e.objects.len() > 50);
    }

    #[test]
    fn a_huge_heading_is_a_short_title_but_whole_content() {
        let title = "Title ".repeat(100_000);
        let md = format!("# {title}\nbody\n");
        let e = extract_as("h.md", md.as_bytes(), None).unwrap();
        assert_bounded(&e);
        assert!(e.structure.nodes[0].title.len() <= MAX_TITLE_BYTES + 3);
        for o in &e.objects {
            let section = o.context_ref.section_id.as_deref().unwrap_or("");
            assert!(section.len() <= MAX_TITLE_BYTES + 3, "{}", section.len());
        }
        let all: String = e.objects.iter().map(|o| o.data.as_str()).collect();
        assert!(all.contains(title.trim()));
    }

    #[test]
    fn an_element_with_many_attributes_and_deep_nesting_reads_its_text() {
        let attrs: String = (0..200_000).map(|i| format!(" a{i}=\"{i}\"")).collect();
        let xml = format!(
            "<?xml version=\"1.0\"?>\n<root{attrs}>\n{}<t>found me</t>{}\n</root>\n",
            "<n>".repeat(100_000),
            "</n>".repeat(100_000)
        );
        let e = extract_as("a.xml", xml.as_bytes(), None).unwrap();
        assert_eq!(e.objects.len(), 1);
        assert_eq!(e.objects[0].data, "found me");
        assert_eq!(lines_of(&e.objects[0]), (3, 3));
    }
}
