//! The file card: one searchable chunk per file that says what the file *is* — its name (and
//! the words in it), the folders and archives above it, its type, its properties (title,
//! author, subject, keywords, album, …), its outline, slide titles, sheet names and column
//! headers, a picture's size and a recording's length. Every indexed file gets one, after its
//! passages, so a file is found by its name and metadata even when it holds no text at all
//! (pictures without OCR text, audio, video), and a question naming a document finds it.
//!
//! The card is built from what extraction already gave (the objects and the structure): no
//! second parse. Its lines come in order of worth and the card is cut to the model's window.

use extractors::{ContentObject, ContentType, FileContentIndex, MEMBER_SEPARATOR};

/// Folders and archives above the file named on the card (the nearest ones).
const MAX_PARENTS: usize = 4;
/// Outline entries, slide titles or sheets named on the card, at most.
const MAX_ENTRIES: usize = 40;

/// The stored and embedded text of a card: the file's type, properties and structure. It
/// says nothing that depends on which file holds the bytes (identical bytes under two names
/// are one content with one card): the names, their words and the folders above them are
/// what its keywords add ([`card_keywords`]), from the files holding it at each write.
pub fn card_text(mime: &str, index: &FileContentIndex, objects: &[ContentObject]) -> String {
    let mut lines = vec![type_line(mime, index, objects)];
    for (key, value) in &index.structure.properties {
        lines.push(format!("{key}: {value}"));
    }
    lines.extend(structure_lines(index, objects));
    lines.join("\n")
}

/// What a card is matched on by keywords before its text: for every file holding its
/// content, the name, the words in it, and the nearest folders and archives above it.
pub fn card_keywords(locators: &[String]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for locator in locators.iter().take(MAX_ENTRIES) {
        let (parents, name) = split_locator(locator);
        let words = name_words(name);
        for line in [name.to_string(), words, parents.join(" ")] {
            if !line.is_empty() && !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    lines.join("\n")
}

/// What a document calls itself: its `title` property, else the words of its file name
/// without the extension (`pump-manual_v2.pdf` gives `pump manual v 2`).
pub fn document_title(locator: &str, index: &FileContentIndex) -> String {
    if let Some(title) = index.structure.properties.get("title") {
        return title.clone();
    }
    let (_, name) = split_locator(locator);
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    name_words(stem)
}

/// The content type a card stands for: its file's main kind of object (a picture's card is
/// an `image`, a document's `text`), so a `content_type` filter finds files by their cards.
pub fn card_content_type(objects: &[ContentObject]) -> ContentType {
    let has = |t: ContentType| objects.iter().any(|o| o.content_type == t);
    if has(ContentType::Text) {
        ContentType::Text
    } else if has(ContentType::Videostream) {
        ContentType::Videostream
    } else if has(ContentType::Audiostream) {
        ContentType::Audiostream
    } else if has(ContentType::Image) {
        ContentType::Image
    } else {
        ContentType::Other
    }
}

/// `(parents, name)`: the nearest [`MAX_PARENTS`] folders and archives above the file, top
/// first, and the file's own name.
fn split_locator(locator: &str) -> (Vec<&str>, &str) {
    let segments: Vec<&str> = locator
        .split(MEMBER_SEPARATOR)
        .flat_map(|part| part.split('/'))
        .filter(|s| !s.is_empty())
        .collect();
    match segments.split_last() {
        Some((name, above)) => {
            let skip = above.len().saturating_sub(MAX_PARENTS);
            (above.iter().skip(skip).copied().collect(), name)
        }
        None => (Vec::new(), locator),
    }
}

/// The words of a file name: `AnnualReport_2023-final.pdf` gives
/// `Annual Report 2023 final pdf` (split at punctuation, lower-to-upper case changes and
/// letter-digit changes), so both keyword and meaning search see words.
pub fn name_words(name: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let boundary = (p.is_lowercase() && c.is_uppercase())
                || (p.is_alphabetic() && c.is_numeric())
                || (p.is_numeric() && c.is_alphabetic());
            if boundary && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        }
        current.push(c);
        prev = Some(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words.join(" ")
}

/// What kind of file it is, in words, with its size in pages, pictures or time.
fn type_line(mime: &str, index: &FileContentIndex, objects: &[ContentObject]) -> String {
    let kind = kind_of(mime);
    let mut facts = vec![kind];
    match index.structure.page_count {
        Some(1) => facts.push("1 page".into()),
        Some(pages) => facts.push(format!("{pages} pages")),
        None => {}
    }
    let summary = &index.object_summary;
    // A picture's or a film's size; not that of the pictures inside a document.
    if mime.starts_with("image/") || mime.starts_with("video/") {
        if let Some((w, h)) = summary.iter().find_map(|s| s.dimensions) {
            facts.push(format!("{w}×{h} pixels"));
        }
    }
    if let Some(seconds) = summary.iter().find_map(|s| s.duration_seconds) {
        facts.push(format!("length {}", duration(seconds)));
    }
    let pictures = objects
        .iter()
        .filter(|o| o.content_type == ContentType::Image)
        .count();
    if pictures > 1 {
        facts.push(format!("{pictures} pictures"));
    }
    facts.join(", ")
}

/// What kind of file a MIME type says, in words.
fn kind_of(mime: &str) -> String {
    match mime {
        "application/pdf" => "PDF document".to_string(),
        m if m.contains("wordprocessingml") || m == "application/msword" => {
            "Word document".to_string()
        }
        m if m.contains("spreadsheetml")
            || m == "application/vnd.ms-excel"
            || m.contains("opendocument.spreadsheet") =>
        {
            "spreadsheet".to_string()
        }
        m if m.contains("presentationml") || m.contains("opendocument.presentation") => {
            "presentation slides".to_string()
        }
        m if m.contains("opendocument.text") => "text document".to_string(),
        "text/csv" | "text/tab-separated-values" => "table".to_string(),
        "text/html" => "web page".to_string(),
        "text/markdown" => "Markdown text".to_string(),
        m if m.starts_with("image/") => format!("picture, image ({m})"),
        m if m.starts_with("audio/") => format!("audio recording, sound ({m})"),
        m if m.starts_with("video/") => format!("video recording, film ({m})"),
        m if m.starts_with("text/") => format!("text ({m})"),
        m => format!("file ({m})"),
    }
}

/// A catalog entry without content of its own, as its card describes it: see
/// [`entry_card_text`].
#[derive(Debug, Clone, Copy)]
pub struct EntryFacts<'a> {
    /// The entry's locator (only its name is used, for an archive's kind).
    pub locator: &'a str,
    /// `failed`, `skipped` or `container`.
    pub status: &'a str,
    /// Why, as the ledger said.
    pub reason: Option<&'a str>,
    /// The type detected from its bytes, if they were read.
    pub mime: Option<&'a str>,
    /// Its size in bytes (0: unknown).
    pub size: u64,
    /// For an archive: the first names inside it (relative to it).
    pub members: &'a [String],
    /// For an archive: how many files and archives are inside it.
    pub member_count: usize,
    /// For an archive: how many of those were not read (links, limits, failures).
    pub unread: usize,
}

/// The text of the card of a file that has no content in the index — one that failed or
/// was skipped, or an archive (whose members have their own): what kind of file it is, why
/// its content is not searchable, and what an archive holds. Its names come from the
/// card's keywords, like every card's; the embedding sees them as its context
/// ([`entry_card_context`]).
pub fn entry_card_text(facts: &EntryFacts<'_>) -> String {
    let (_, name) = split_locator(facts.locator);
    let mut kind = match facts.mime {
        Some(mime) => kind_of(mime),
        None if facts.status == "container" => archive_kind(name).to_string(),
        None => "file".to_string(),
    };
    if facts.size > 0 {
        kind.push_str(&format!(", {}", byte_size(facts.size)));
    }
    let mut lines = vec![kind];
    match facts.status {
        "container" => {
            // A message's headers (from, to, subject, date) say what it is.
            if let Some(head) = facts.reason.and_then(|r| r.strip_prefix("mail: ")) {
                lines.push(head.to_string());
            }
            let plural = if facts.member_count == 1 { "" } else { "s" };
            lines.push(format!("holds {} file{plural}", facts.member_count));
            if !facts.members.is_empty() {
                let more = facts.member_count.saturating_sub(facts.members.len());
                let mut list = facts.members.join("; ");
                if more > 0 {
                    list.push_str(&format!("; and {more} more"));
                }
                lines.push(format!("contents: {list}"));
            }
            if facts.unread > 0 {
                lines.push(format!(
                    "{} of them not read (links, limits or failures)",
                    facts.unread
                ));
            }
        }
        status => {
            let why = facts.reason.unwrap_or("no reason given");
            lines.push(format!("content not searchable: {status} ({why})"));
        }
    }
    lines.join("\n")
}

/// What the embedding of an entry card sees before its text: the file's name and its words.
pub fn entry_card_context(locator: &str) -> String {
    let (_, name) = split_locator(locator);
    format!("{name}\n{}", name_words(name))
}

/// An archive's kind, by its name's ending.
fn archive_kind(name: &str) -> &'static str {
    let name = name.to_ascii_lowercase();
    let ends = |suffixes: &[&str]| suffixes.iter().any(|s| name.ends_with(s));
    if ends(&[".eml"]) {
        "e-mail message"
    } else if ends(&[".mbox", ".mbx"]) {
        "mailbox"
    } else if ends(&[".msg"]) {
        "Outlook e-mail message"
    } else if ends(&[".epub"]) {
        "EPUB e-book (archive)"
    } else if ends(&[
        ".zip", ".jar", ".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp",
    ]) {
        "ZIP archive"
    } else if ends(&[
        ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst",
    ]) {
        "compressed tar archive"
    } else if ends(&[".tar"]) {
        "tar archive"
    } else if ends(&[".gz", ".bz2", ".xz", ".zst"]) {
        "compressed file"
    } else if ends(&[".7z"]) {
        "7-Zip archive"
    } else {
        "archive"
    }
}

/// `12 bytes`, `3.4 KB`, `1.2 MB`, `2.0 GB`.
fn byte_size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KB", "MB", "GB"];
    if bytes < 1000 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS.get(unit).copied().unwrap_or("GB"))
}

/// `h:mm:ss` or `m:ss`.
fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// Outline, slide titles, sheet names with their column headers.
fn structure_lines(index: &FileContentIndex, objects: &[ContentObject]) -> Vec<String> {
    let nodes = &index.structure.nodes;
    let titles = |kind: &str, max_level: u32| -> Vec<&str> {
        nodes
            .iter()
            .filter(|n| n.kind == kind && n.level <= max_level && !n.title.trim().is_empty())
            .map(|n| n.title.trim())
            .take(MAX_ENTRIES)
            .collect()
    };
    let mut lines = Vec::new();
    let sheets = titles("sheet", u32::MAX);
    if !sheets.is_empty() {
        let described: Vec<String> = sheets
            .iter()
            .map(|sheet| match columns_of_sheet(objects, sheet) {
                Some(cols) => format!("{sheet} (columns: {cols})"),
                None => (*sheet).to_string(),
            })
            .collect();
        lines.push(format!("sheets: {}", described.join("; ")));
    } else if let Some(cols) = columns_of(objects.iter()) {
        lines.push(format!("columns: {cols}"));
    }
    let slides = titles("slide", u32::MAX);
    if !slides.is_empty() {
        lines.push(format!("slides: {}", slides.join("; ")));
    }
    let sections = titles("section", 2);
    if !sections.is_empty() {
        lines.push(format!("contents: {}", sections.join("; ")));
    }
    lines
}

/// The column headers of the first table of sheet `sheet`.
fn columns_of_sheet(objects: &[ContentObject], sheet: &str) -> Option<String> {
    columns_of(
        objects
            .iter()
            .filter(|o| o.context_ref.sheet_name.as_deref() == Some(sheet)),
    )
}

/// The column headers of the first table among `objects` (a text object with
/// `header_lines`): its first line's cells, `a, b, c`.
fn columns_of<'a>(mut objects: impl Iterator<Item = &'a ContentObject>) -> Option<String> {
    let table = objects.find(|o| {
        o.content_type == ContentType::Text
            && o.metadata
                .get("header_lines")
                .and_then(serde_json::Value::as_u64)
                .is_some_and(|n| n > 0)
    })?;
    let header = table.data.lines().next()?;
    let cells: Vec<&str> = header
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.chars().all(|ch| ch == '-' || ch == ':'))
        .take(MAX_ENTRIES)
        .collect();
    (!cells.is_empty()).then(|| cells.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use extractors::{ContextRef, IndexStatus, ObjectSummary, Structure, StructureNode};

    fn index(mime: &str, structure: Structure, summary: Vec<ObjectSummary>) -> FileContentIndex {
        FileContentIndex {
            id: "h".into(),
            file_name: "f".into(),
            mime_type: mime.into(),
            container_path: "f".into(),
            total_objects: 0,
            total_size: 0,
            structure,
            object_summary: summary,
            extracted_at: 0,
            status: IndexStatus::Extracted,
            error: None,
        }
    }

    #[test]
    fn name_words_split_where_a_reader_would() {
        assert_eq!(
            name_words("AnnualReport_2023-final.pdf"),
            "Annual Report 2023 final pdf"
        );
        assert_eq!(name_words("IMG_2043.JPG"), "IMG 2043 JPG");
        assert_eq!(name_words("größe-übersicht.xlsx"), "größe übersicht xlsx");
        assert_eq!(name_words("..."), "");
    }

    #[test]
    fn a_picture_without_text_has_a_card_with_its_size_and_keywords_with_its_names() {
        let summary = vec![ObjectSummary {
            id: "o".into(),
            content_type: ContentType::Image,
            location: "x".into(),
            label: None,
            section: None,
            char_count: 0,
            dimensions: Some((800, 600)),
            duration_seconds: None,
        }];
        let mut structure = Structure::default();
        structure
            .properties
            .insert("description".into(), "Harbour at dawn".into());
        let idx = index("image/jpeg", structure, summary);
        assert_eq!(
            card_text("image/jpeg", &idx, &[]),
            "picture, image (image/jpeg), 800×600 pixels\ndescription: Harbour at dawn"
        );
        let holders = [
            "/home/u/photos.zip!/2023/trip/skerry_lighthouse.jpg".to_string(),
            "/home/u/best/skerry_lighthouse.jpg".to_string(),
        ];
        assert_eq!(
            card_keywords(&holders),
            "skerry_lighthouse.jpg\nskerry lighthouse jpg\nu photos.zip 2023 trip\nhome u best"
        );
    }

    #[test]
    fn a_workbook_card_names_its_sheets_and_their_columns() {
        let sheet = |name: &str| StructureNode {
            kind: "sheet".into(),
            title: name.into(),
            level: 1,
            locator: "w.xlsx".into(),
            objects: 1,
            pages: None,
        };
        let table = ContentObject {
            id: "t".into(),
            file_id: "h".into(),
            content_type: ContentType::Text,
            data: "| Region | Q1 | Q2 |\n|---|---|---|\n| North | 1 | 2 |".into(),
            context_ref: ContextRef {
                sheet_name: Some("Pivot".into()),
                ..ContextRef::default()
            },
            metadata: serde_json::json!({ "header_lines": 2 })
                .as_object()
                .cloned()
                .unwrap_or_default(),
            sequence: 0,
            positions: None,
        };
        let structure = Structure {
            nodes: vec![sheet("Data"), sheet("Pivot")],
            ..Structure::default()
        };
        let mime = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
        let text = card_text(mime, &index(mime, structure, vec![]), &[table]);
        assert!(
            text.ends_with("spreadsheet\nsheets: Data; Pivot (columns: Region, Q1, Q2)"),
            "{text}"
        );
        assert_eq!(duration(3725.4), "1:02:05");
        assert_eq!(duration(59.6), "1:00");
    }

    #[test]
    fn an_entry_card_says_what_the_file_is_and_why_its_content_is_not_searchable() {
        let failed = entry_card_text(&EntryFacts {
            locator: "/docs/secret-plan.pdf",
            status: "failed",
            reason: Some("malformed pdf: encrypted"),
            mime: Some("application/pdf"),
            size: 48_213,
            members: &[],
            member_count: 0,
            unread: 0,
        });
        assert_eq!(
            failed,
            "PDF document, 48.2 KB\ncontent not searchable: failed (malformed pdf: encrypted)"
        );
        let members = ["a.txt".to_string(), "b/c.pdf".to_string()];
        let archive = entry_card_text(&EntryFacts {
            locator: "/in/backup.tar.gz",
            status: "container",
            reason: Some("archive: 5 members"),
            mime: None,
            size: 999,
            members: &members,
            member_count: 5,
            unread: 2,
        });
        assert_eq!(
            archive,
            "compressed tar archive, 999 bytes\nholds 5 files\ncontents: a.txt; b/c.pdf; and 3 more\n\
             2 of them not read (links, limits or failures)"
        );
        let members = ["message.txt".to_string(), "plan.pdf".to_string()];
        let mail = entry_card_text(&EntryFacts {
            locator: "/in/box.mbox!/0003 Site visit.eml",
            status: "container",
            reason: Some("mail: subject \"Site visit\"; from Erin <e@x.org>; 1 attachment"),
            mime: None,
            size: 0,
            members: &members,
            member_count: 2,
            unread: 0,
        });
        assert_eq!(
            mail,
            "e-mail message\nsubject \"Site visit\"; from Erin <e@x.org>; 1 attachment\n\
             holds 2 files\ncontents: message.txt; plan.pdf"
        );
        assert_eq!(
            entry_card_context("/in/x.zip!/Q3-Report_final.docx"),
            "Q3-Report_final.docx\nQ 3 Report final docx"
        );
    }
}
