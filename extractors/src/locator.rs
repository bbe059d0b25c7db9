//! Locators: one string that names any file, archive member or object exactly.
//!
//! ```text
//! outer.zip!/docs/inner.tar.gz!/report.pdf#page=12
//! book.xlsx#sheet=Q3&rows=1-40
//! notes.md#line=10-42
//! handbook.docx#para=12-19
//! ```
//!
//! The path part is the chain of containers: the first segment is the path the user gave, each
//! `!/` steps into a container member. The fragment says where inside the file. Characters that
//! would be ambiguous (`%`, `#`, `!/` in names; `&`, `=` in fragment values) are percent-escaped,
//! so `parse(print(l)) == l` for every locator. So are characters that would make a name read
//! as another when shown ([`is_invisible`]: bidi overrides, zero-width characters): an
//! attachment `invoice\u{202e}fdp.exe`, which a terminal shows as `invoiceexe.pdf`, prints as
//! `invoice%E2%80%AEfdp.exe` wherever a locator is shown (CLI output, tool answers, logs),
//! and that printed form names it when given back.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Separator between a container and a member path inside it.
pub const MEMBER_SEPARATOR: &str = "!/";

/// A parsed locator. Printing it with `Display` gives the canonical string.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Locator {
    /// The container chain: `["outer.zip", "docs/inner.tar.gz", "report.pdf"]`.
    pub segments: Vec<String>,
    pub fragment: Fragment,
}

/// The part after `#`: where inside a file. Keys print in a fixed order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fragment {
    /// 1-based physical page.
    pub page: Option<u32>,
    pub sheet: Option<String>,
    /// 1-based slide.
    pub slide: Option<u32>,
    /// 1-based inclusive line range.
    pub lines: Option<(u64, u64)>,
    /// 1-based inclusive row range (CSV, sheets).
    pub rows: Option<(u64, u64)>,
    /// 1-based inclusive range of body blocks (paragraphs, headings, tables) of a flowing
    /// document (DOCX, ODT), in document order.
    pub paras: Option<(u64, u64)>,
}

impl Fragment {
    pub fn is_empty(&self) -> bool {
        self == &Fragment::default()
    }
}

/// Why a string is not a locator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocatorError {
    #[error("empty locator")]
    Empty,
    #[error("empty path segment in locator")]
    EmptySegment,
    #[error("bad percent-escape in locator: {0:?}")]
    BadEscape(String),
    #[error("unknown fragment key {0:?} (expected page, sheet, slide, line, rows or para)")]
    UnknownKey(String),
    #[error("bad value for fragment key {key}: {value:?}")]
    BadValue { key: String, value: String },
    #[error("fragment key {0} given twice")]
    DuplicateKey(String),
}

impl Locator {
    /// A locator for a file on disk (or any root name).
    pub fn root(path: impl Into<String>) -> Self {
        Locator {
            segments: vec![path.into()],
            fragment: Fragment::default(),
        }
    }

    /// The locator of member `name` inside this container.
    pub fn member(&self, name: impl Into<String>) -> Self {
        let mut segments = self.segments.clone();
        segments.push(name.into());
        Locator {
            segments,
            fragment: Fragment::default(),
        }
    }

    /// This locator with `fragment` set.
    pub fn with_fragment(&self, fragment: Fragment) -> Self {
        Locator {
            segments: self.segments.clone(),
            fragment,
        }
    }

    /// This locator without its fragment: the file itself.
    pub fn without_fragment(&self) -> Self {
        self.with_fragment(Fragment::default())
    }

    /// How many containers deep the file is (0 for a file on disk).
    pub fn depth(&self) -> usize {
        self.segments.len().saturating_sub(1)
    }

    /// The file's own name: the last path component of the last segment.
    pub fn file_name(&self) -> &str {
        let last = self.segments.last().map(String::as_str).unwrap_or("");
        last.rsplit('/').next().unwrap_or(last)
    }

    /// Whether `self` is `other` or lies inside it (a member of it, at any depth, or a
    /// fragment of it).
    pub fn is_within(&self, other: &Locator) -> bool {
        other.fragment.is_empty()
            && self.segments.len() >= other.segments.len()
            && self
                .segments
                .iter()
                .zip(&other.segments)
                .all(|(a, b)| a == b)
    }
}

impl Locator {
    /// The file on disk (or upload) the locator starts from: its first segment alone.
    pub fn top(&self) -> Locator {
        Locator {
            segments: self.segments.first().cloned().into_iter().collect(),
            fragment: Fragment::default(),
        }
    }

    /// Whether it names something inside a container (it has a `!/`).
    pub fn is_member(&self) -> bool {
        self.segments.len() > 1
    }
}

/// A printed locator's file part (before `#`) and its fragment text (after it; empty when
/// none), without parsing: a `#` in a name is printed escaped, so the first `#` is the
/// fragment's. For hot paths and for strings that are not known to be valid locators;
/// parse with [`Locator::from_str`] where the parts' values are needed.
pub fn split_fragment(locator: &str) -> (&str, &str) {
    locator.split_once('#').unwrap_or((locator, ""))
}

/// A printed locator without its fragment: the file itself.
pub fn file_part(locator: &str) -> &str {
    split_fragment(locator).0
}

/// A printed locator's first segment (the file on disk or the upload's name) and the member
/// path after the first `!/`, if it names an archive member. The fragment stays with the
/// member path (or with the top, for a file that is not a member).
pub fn split_top(locator: &str) -> (&str, Option<&str>) {
    match locator.split_once(MEMBER_SEPARATOR) {
        Some((top, member)) => (top, Some(member)),
        None => (locator, None),
    }
}

/// The file's own name in a printed locator: the last path component of its file part,
/// as printed (escapes kept).
pub fn file_name_part(locator: &str) -> &str {
    let file = file_part(locator);
    let last = file.rsplit(MEMBER_SEPARATOR).next().unwrap_or(file);
    last.rsplit('/').find(|s| !s.is_empty()).unwrap_or(last)
}

/// Private-use characters U+10FF80–U+10FFFF stand for the bytes 0x80–0xFF of a name that is
/// not valid UTF-8 (a tar member written in Latin-1, say). They print as `%XX`, so a locator
/// names the exact bytes, and parse back to the same characters.
const RAW_BYTE_BASE: u32 = 0x10_FF00;

/// A locator segment for a name given as raw bytes: valid UTF-8 stays as it is; each byte of
/// an invalid sequence is kept (it prints as `%XX`).
pub fn segment_from_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push(char::from_u32(RAW_BYTE_BASE + u32::from(*b)).unwrap_or('\u{FFFD}'));
        }
    }
    out
}

/// The raw byte a private-use character of [`segment_from_bytes`] stands for.
fn raw_byte(c: char) -> Option<u8> {
    u32::from(c)
        .checked_sub(RAW_BYTE_BASE)
        .filter(|b| *b >= 0x80)
        .and_then(|b| u8::try_from(b).ok())
}

/// Characters that change how text around them looks without being seen themselves: bidi
/// controls and isolates, zero-width characters, the BOM and other format characters. A name
/// holding one is refused as an upload's name, and printed escaped in a locator.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}' | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E0FFF}')
}

fn escape_segment(s: &str, out: &mut String) {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '%' => out.push_str("%25"),
            '#' => out.push_str("%23"),
            '!' if chars.peek() == Some(&'/') => out.push_str("%21"),
            c if c.is_control() || is_invisible(c) => push_escaped(c, out),
            c => match raw_byte(c) {
                Some(b) => out.push_str(&format!("%{b:02X}")),
                None => out.push(c),
            },
        }
    }
}

fn escape_value(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '%' | '&' | '=' | '#' => push_escaped(c, out),
            c if c.is_control() || is_invisible(c) => push_escaped(c, out),
            c => match raw_byte(c) {
                Some(b) => out.push_str(&format!("%{b:02X}")),
                None => out.push(c),
            },
        }
    }
}

fn push_escaped(c: char, out: &mut String) {
    let mut buf = [0u8; 4];
    for b in c.encode_utf8(&mut buf).bytes() {
        out.push_str(&format!("%{b:02X}"));
    }
}

fn unescape(s: &str) -> Result<String, LocatorError> {
    if !s.contains('%') {
        return Ok(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| LocatorError::BadEscape(s.to_string()))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Ok(segment_from_bytes(&out))
}

/// A fragment's 1-based inclusive range value: `47` or `40-47` (`key` names it in the error).
pub fn parse_range(key: &str, value: &str) -> Result<(u64, u64), LocatorError> {
    let bad = || LocatorError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
    };
    let (a, b) = match value.split_once('-') {
        Some((a, b)) => (a, b),
        None => (value, value),
    };
    let a: u64 = a.parse().map_err(|_| bad())?;
    let b: u64 = b.parse().map_err(|_| bad())?;
    if a == 0 || b < a {
        return Err(bad());
    }
    Ok((a, b))
}

fn parse_positive(key: &str, value: &str) -> Result<u32, LocatorError> {
    match value.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(LocatorError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
        }),
    }
}

fn set_once<T>(slot: &mut Option<T>, key: &str, value: T) -> Result<(), LocatorError> {
    if slot.is_some() {
        return Err(LocatorError::DuplicateKey(key.to_string()));
    }
    *slot = Some(value);
    Ok(())
}

impl FromStr for Fragment {
    type Err = LocatorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut f = Fragment::default();
        for pair in s.split('&').filter(|p| !p.is_empty()) {
            let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
            let value = unescape(raw)?;
            match key {
                "page" => set_once(&mut f.page, key, parse_positive(key, &value)?)?,
                "slide" => set_once(&mut f.slide, key, parse_positive(key, &value)?)?,
                "sheet" => set_once(&mut f.sheet, key, value)?,
                "line" => set_once(&mut f.lines, key, parse_range(key, &value)?)?,
                "rows" => set_once(&mut f.rows, key, parse_range(key, &value)?)?,
                "para" => set_once(&mut f.paras, key, parse_range(key, &value)?)?,
                other => return Err(LocatorError::UnknownKey(other.to_string())),
            }
        }
        Ok(f)
    }
}

impl fmt::Display for Fragment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(p) = self.page {
            parts.push(format!("page={p}"));
        }
        if let Some(s) = &self.sheet {
            let mut v = String::from("sheet=");
            escape_value(s, &mut v);
            parts.push(v);
        }
        if let Some(s) = self.slide {
            parts.push(format!("slide={s}"));
        }
        if let Some((a, b)) = self.lines {
            parts.push(format!("line={}", range(a, b)));
        }
        if let Some((a, b)) = self.rows {
            parts.push(format!("rows={}", range(a, b)));
        }
        if let Some((a, b)) = self.paras {
            parts.push(format!("para={}", range(a, b)));
        }
        f.write_str(&parts.join("&"))
    }
}

fn range(a: u64, b: u64) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}-{b}")
    }
}

impl FromStr for Locator {
    type Err = LocatorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Err(LocatorError::Empty);
        }
        let (path, fragment) = match s.split_once('#') {
            Some((p, f)) => (p, f.parse()?),
            None => (s, Fragment::default()),
        };
        let segments = path
            .split(MEMBER_SEPARATOR)
            .map(|seg| {
                if seg.is_empty() {
                    Err(LocatorError::EmptySegment)
                } else {
                    unescape(seg)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Locator { segments, fragment })
    }
}

impl fmt::Display for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        for (i, seg) in self.segments.iter().enumerate() {
            if i > 0 {
                out.push_str(MEMBER_SEPARATOR);
            }
            escape_segment(seg, &mut out);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&self.fragment.to_string());
        }
        f.write_str(&out)
    }
}

impl Serialize for Locator {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Locator {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(s: &str) {
        let l: Locator = s.parse().unwrap();
        assert_eq!(l.to_string(), s, "{l:?}");
    }

    #[test]
    fn printed_parts_agree_with_the_parsed_locator() {
        for s in [
            "outer.zip!/docs/inner.tar.gz!/report.pdf#page=12",
            "/d/a%23b.pdf#page=2",
            "/d/x%21/y.txt",
            "book.xlsx#sheet=Q%263&rows=1-40",
            "up.zip!/c.md",
        ] {
            let l: Locator = s.parse().unwrap();
            assert_eq!(file_part(s), l.without_fragment().to_string(), "{s}");
            assert_eq!(split_fragment(s).1, l.fragment.to_string(), "{s}");
            assert_eq!(file_part(split_top(s).0), l.top().to_string(), "{s}");
            assert_eq!(split_top(s).1.is_some(), l.is_member(), "{s}");
        }
        assert_eq!(file_name_part("/d/a.zip!/x/b.pdf#page=3"), "b.pdf");
        assert_eq!(file_name_part("upload.zip!/c.md"), "c.md");
        assert_eq!(file_name_part("notes.txt"), "notes.txt");
        assert_eq!(file_name_part("/d/Hello!.pdf#page=1"), "Hello!.pdf");
        assert_eq!(file_name_part("/d/a.zip!/dir/"), "dir");
        assert_eq!(
            split_top("a.zip!/b.zip!/c#line=1"),
            ("a.zip", Some("b.zip!/c#line=1"))
        );
        assert_eq!(parse_range("rows", "2-40"), Ok((2, 40)));
        assert!(parse_range("rows", "0").is_err());
    }

    #[test]
    fn examples_from_the_spec_round_trip() {
        round_trip("outer.zip!/docs/inner.tar.gz!/report.pdf#page=12");
        round_trip("book.xlsx#sheet=Q3&rows=1-40");
        round_trip("deck.pptx#slide=4");
        round_trip("notes.md#line=10-42");
        round_trip("handbook.docx#para=3-9");
        round_trip("/abs/path/file.txt");
    }

    #[test]
    fn structure_is_parsed() {
        let l: Locator = "outer.zip!/docs/inner.tar.gz!/report.pdf#page=12"
            .parse()
            .unwrap();
        assert_eq!(
            l.segments,
            vec!["outer.zip", "docs/inner.tar.gz", "report.pdf"]
        );
        assert_eq!(l.fragment.page, Some(12));
        assert_eq!(l.depth(), 2);
        assert_eq!(l.file_name(), "report.pdf");
        assert!(l.is_within(&"outer.zip".parse().unwrap()));
        assert!(!l.is_within(&"other.zip".parse().unwrap()));
    }

    #[test]
    fn names_that_would_read_as_others_are_printed_escaped_and_round_trip() {
        // Shown raw, `invoice\u{202e}fdp.exe` reads `invoiceexe.pdf`.
        for (name, printed) in [
            (
                "invoice\u{202e}fdp.exe",
                "mail.eml!/invoice%E2%80%AEfdp.exe",
            ),
            ("a\u{200b}b.pdf", "mail.eml!/a%E2%80%8Bb.pdf"),
            ("\u{2067}x\u{2069}.txt", "mail.eml!/%E2%81%A7x%E2%81%A9.txt"),
        ] {
            let l = Locator::root("mail.eml").member(name);
            assert_eq!(l.to_string(), printed);
            assert_eq!(printed.parse::<Locator>().unwrap(), l);
        }
        let sheet = Locator::root("b.xlsx").with_fragment(Fragment {
            sheet: Some("Q\u{202e}3".into()),
            ..Fragment::default()
        });
        assert_eq!(sheet.to_string(), "b.xlsx#sheet=Q%E2%80%AE3");
        round_trip(&sheet.to_string());
    }

    #[test]
    fn awkward_names_are_escaped_and_round_trip() {
        let l = Locator::root("a#b!/c%d.zip")
            .member("x!/y #1.txt")
            .with_fragment(Fragment {
                sheet: Some("Q3 & Q4 = 100%".into()),
                lines: Some((7, 7)),
                ..Fragment::default()
            });
        let s = l.to_string();
        assert_eq!(s.matches(MEMBER_SEPARATOR).count(), 1, "{s}");
        assert_eq!(s.matches('#').count(), 1, "{s}");
        let back: Locator = s.parse().unwrap();
        assert_eq!(back, l);
    }

    #[test]
    fn names_that_are_not_utf8_keep_their_bytes() {
        let name = segment_from_bytes(b"na\xefve/caf\xe9 \xff.txt");
        let l = Locator::root("t.tar").member(name);
        let s = l.to_string();
        assert_eq!(s, "t.tar!/na%EFve/caf%E9 %FF.txt");
        let back: Locator = s.parse().unwrap();
        assert_eq!(back, l);
        // Valid UTF-8 stays readable; a literal percent sign stays distinct from a raw byte.
        assert_eq!(segment_from_bytes("café".as_bytes()), "café");
        let pct = Locator::root("x").member("100%E9");
        assert_eq!(pct.to_string(), "x!/100%25E9");
        assert_eq!(pct.to_string().parse::<Locator>().unwrap(), pct);
    }

    #[test]
    fn bad_locators_are_errors_not_panics() {
        for bad in [
            "",
            "a!/",
            "a#page=0",
            "a#page=x",
            "a#line=9-3",
            "a#nope=1",
            "a%zz",
            "a%",
            "a#page=1&page=2",
        ] {
            assert!(bad.parse::<Locator>().is_err(), "{bad:?} parsed");
        }
    }
}
