//! File type detection from the bytes (magic numbers); the file name is only a hint, used to
//! tell apart text formats that have no magic (CSV vs plain text, Markdown vs plain text).

use serde::{Deserialize, Serialize};

/// Containers the unpacker opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerKind {
    Zip,
    Tar,
    Gzip,
    /// One e-mail message (RFC 5322 / MIME, `.eml`).
    Mail,
    /// A mailbox of messages, each after a `From ` line (`.mbox`).
    Mbox,
    /// An Outlook message (`.msg`, a compound file of MAPI properties).
    Msg,
}

/// Text formats with their own extractor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextKind {
    Plain,
    Markdown,
    Csv,
    Tsv,
    Json,
    Xml,
    Html,
    /// A manual page: troff with the man or mdoc macros.
    Man,
}

/// Office and page-description documents (extracted by later format modules; until then they
/// are reported as `other` objects with their sniffed type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocumentKind {
    Pdf,
    Docx,
    Xlsx,
    Xls,
    Ods,
    Pptx,
    Odp,
    Odt,
}

/// What a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "family", content = "kind", rename_all = "lowercase")]
pub enum FileKind {
    Container(ContainerKind),
    Document(DocumentKind),
    Text(TextKind),
    Image,
    Audio,
    Video,
    Other,
}

/// The result of sniffing a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detected {
    pub kind: FileKind,
    /// Best-known MIME type.
    pub mime: String,
}

/// How many leading bytes detection looks at (tar needs 512, text sniffing a few KiB).
pub const SNIFF_LEN: usize = 8192;

/// Detect the type of a file from its leading bytes (`head`, at least [`SNIFF_LEN`] bytes
/// when the file is that long) and its name.
pub fn detect(head: &[u8], name: &str) -> Detected {
    let ext = extension(name);
    let d = |kind, mime: &str| Detected {
        kind,
        mime: mime.to_string(),
    };

    if head.starts_with(&[0x1f, 0x8b]) {
        return d(FileKind::Container(ContainerKind::Gzip), "application/gzip");
    }
    if is_tar(head) {
        return d(FileKind::Container(ContainerKind::Tar), "application/x-tar");
    }
    if head.starts_with(b"%PDF-") {
        return d(FileKind::Document(DocumentKind::Pdf), "application/pdf");
    }
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return detect_zip_based(head);
    }
    if head.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
        // OLE2 compound file: legacy Office. Only XLS has an extractor planned.
        return match ext.as_str() {
            "xls" => d(
                FileKind::Document(DocumentKind::Xls),
                "application/vnd.ms-excel",
            ),
            // The unpacker also tells a message by its streams when the name does not.
            "msg" => d(
                FileKind::Container(ContainerKind::Msg),
                "application/vnd.ms-outlook",
            ),
            _ => d(FileKind::Other, "application/x-ole-storage"),
        };
    }
    // infer takes any 0xFF 0xFB for MP3; without an ID3 tag, the frames must check out.
    let fake_mp3 = |t: &infer::Type| {
        t.mime_type() == "audio/mpeg" && !head.starts_with(b"ID3") && !mpeg_audio(head, &ext)
    };
    if let Some(t) = infer::get(head).filter(|t| !fake_mp3(t)) {
        let mime = t.mime_type();
        let kind = match t.matcher_type() {
            infer::MatcherType::Image => FileKind::Image,
            infer::MatcherType::Audio => FileKind::Audio,
            infer::MatcherType::Video => FileKind::Video,
            _ => FileKind::Other,
        };
        if kind != FileKind::Other || !looks_like_text(head) {
            return d(kind, mime);
        }
    }
    if mpeg_audio(head, &ext) {
        return d(FileKind::Audio, "audio/mpeg");
    }
    if looks_like_text(head) {
        match mail_kind(head, &ext) {
            Some(ContainerKind::Mbox) => {
                return d(FileKind::Container(ContainerKind::Mbox), "application/mbox")
            }
            Some(kind) => return d(FileKind::Container(kind), "message/rfc822"),
            None => {}
        }
        let kind = text_kind(head, &ext, name);
        let mime = match kind {
            TextKind::Plain => "text/plain",
            TextKind::Markdown => "text/markdown",
            TextKind::Csv => "text/csv",
            TextKind::Tsv => "text/tab-separated-values",
            TextKind::Json => "application/json",
            TextKind::Xml => "application/xml",
            TextKind::Html => "text/html",
            TextKind::Man => "text/troff",
        };
        if kind == TextKind::Xml && starts_with_tag(head, b"<svg") {
            return d(FileKind::Image, "image/svg+xml");
        }
        return d(FileKind::Text(kind), mime);
    }
    d(FileKind::Other, "application/octet-stream")
}

/// The length in bytes of the MPEG audio frame whose header starts `b`, if `b` starts with a
/// valid one (frame sync, a known version and layer, a real bitrate and sample rate).
fn mpeg_frame_len(b: &[u8]) -> Option<usize> {
    let (&b0, &b1, &b2) = (b.first()?, b.get(1)?, b.get(2)?);
    if b0 != 0xFF || b1 & 0xE0 != 0xE0 {
        return None;
    }
    let version = (b1 >> 3) & 0b11; // 0: MPEG 2.5, 2: MPEG 2, 3: MPEG 1 (1 is reserved)
    let layer = (b1 >> 1) & 0b11; // 1: III, 2: II, 3: I (0 is reserved)
    let bitrate_index = usize::from(b2 >> 4);
    let rate_index = usize::from((b2 >> 2) & 0b11);
    if version == 1 || layer == 0 || bitrate_index == 0 || bitrate_index == 15 || rate_index == 3 {
        return None;
    }
    let padding = usize::from((b2 >> 1) & 1);
    // kbit/s by [MPEG 1 | MPEG 2/2.5][layer I | II | III].
    const RATES: [[[u16; 15]; 3]; 2] = [
        [
            [
                0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448,
            ],
            [
                0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384,
            ],
            [
                0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
            ],
        ],
        [
            [
                0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256,
            ],
            [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
            [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
        ],
    ];
    let mpeg1 = version == 3;
    let layer_i = 3 - usize::from(layer); // 0: I, 1: II, 2: III
    let kbps = usize::from(
        *RATES
            .get(usize::from(!mpeg1))?
            .get(layer_i)?
            .get(bitrate_index)?,
    );
    let rate = [44_100usize, 48_000, 32_000].get(rate_index)?
        >> match version {
            3 => 0,
            2 => 1,
            _ => 2,
        };
    let len = match layer_i {
        0 => (12 * kbps * 1000 / rate + padding) * 4,
        2 if !mpeg1 => 72 * kbps * 1000 / rate + padding,
        _ => 144 * kbps * 1000 / rate + padding,
    };
    (len >= 4).then_some(len)
}

/// Whether `head` is MPEG audio (MP3) without an ID3 tag: a frame header at the start (after
/// at most 4 KiB of zero padding) followed by another where its length says, or (for a
/// `.mp3`/`.mp2` name, whose second frame may lie past the head) one valid header.
fn mpeg_audio(head: &[u8], ext: &str) -> bool {
    let start = head.iter().take(4096).take_while(|&&b| b == 0).count();
    let Some(at) = head.get(start..) else {
        return false;
    };
    let Some(len) = mpeg_frame_len(at) else {
        return false;
    };
    match at.get(len..) {
        Some(next) if next.len() >= 3 => mpeg_frame_len(next).is_some(),
        _ => matches!(ext, "mp3" | "mp2" | "mpga"),
    }
}

fn extension(name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    match base.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
        _ => String::new(),
    }
}

/// A ZIP file may be an OOXML/ODF document or a plain archive, told by its structure, never
/// by a byte pattern anywhere in it: ODF stores its `mimetype` member first and uncompressed;
/// OOXML has a `[Content_Types].xml` entry beside its main part. Entry names are read from the
/// local headers *walked in order* from the start of `head` (one header, its data, the next):
/// the headers of a zip stored inside the zip (a `.docx` member of a stored archive) are data,
/// not entries. When the walk cannot tell (a header whose size is in a data descriptor, parts
/// past the head), the file is taken for an archive and the unpacker decides from the central
/// directory ([`package_kind`]).
fn detect_zip_based(head: &[u8]) -> Detected {
    let d = |kind, mime: &str| Detected {
        kind,
        mime: mime.to_string(),
    };
    let entries = local_entries(head);
    let mimetype = entries
        .first()
        .filter(|(name, _)| name == "mimetype")
        .and_then(|(_, data)| data.as_deref())
        .map(|m| String::from_utf8_lossy(m).trim().to_string());
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    if let Some(found) = package_kind(names.iter().copied(), mimetype.as_deref()) {
        return found;
    }
    match mimetype.as_deref() {
        // A zip package of its own kind (EPUB and the like), named by its first member.
        Some(m) if !m.is_empty() && m.len() <= 128 && m.is_ascii() => d(FileKind::Other, m),
        _ => d(FileKind::Container(ContainerKind::Zip), "application/zip"),
    }
}

/// The entries whose local headers are met walking `head` from its start, in order: each
/// name, and its data when it is stored uncompressed and lies in `head` (what a `mimetype`
/// member needs). The walk stops at the first header it cannot step over.
fn local_entries(head: &[u8]) -> Vec<(String, Option<Vec<u8>>)> {
    let u16_at = |at: usize| {
        head.get(at..at + 2)
            .and_then(|b| b.try_into().ok())
            .map(u16::from_le_bytes)
    };
    let u32_at = |at: usize| {
        head.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    };
    let mut entries = Vec::new();
    let mut at = 0usize;
    while head.get(at..at + 4) == Some(b"PK\x03\x04") && entries.len() < 64 {
        let (Some(flags), Some(method), Some(size), Some(name_len), Some(extra_len)) = (
            u16_at(at + 6),
            u16_at(at + 8),
            u32_at(at + 18),
            u16_at(at + 26),
            u16_at(at + 28),
        ) else {
            break;
        };
        let name_at = at + 30;
        let Some(name) = head.get(name_at..name_at + usize::from(name_len)) else {
            break;
        };
        let data_at = name_at + usize::from(name_len) + usize::from(extra_len);
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        let data = (method == 0)
            .then(|| head.get(data_at..data_at.saturating_add(size)))
            .flatten()
            .filter(|d| d.len() <= 256)
            .map(<[u8]>::to_vec);
        entries.push((String::from_utf8_lossy(name).into_owned(), data));
        // A size kept in a data descriptor (flag bit 3) or in a zip64 field: the next header
        // cannot be found from here.
        if flags & 0x08 != 0 || size == 0xFFFF_FFFF {
            break;
        }
        at = data_at.saturating_add(size);
    }
    entries
}

/// The office document kind of a ZIP package, from its member `names` or an ODF `mimetype`
/// (or a MIME type already sniffed). `None` for a plain archive.
pub fn package_kind<'a>(
    names: impl IntoIterator<Item = &'a str>,
    mimetype: Option<&str>,
) -> Option<Detected> {
    const KINDS: [(&str, DocumentKind, &str); 6] = [
        (
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            DocumentKind::Docx,
            "word/document.xml",
        ),
        (
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            DocumentKind::Xlsx,
            "xl/workbook.xml",
        ),
        (
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            DocumentKind::Pptx,
            "ppt/presentation.xml",
        ),
        (
            "application/vnd.oasis.opendocument.text",
            DocumentKind::Odt,
            "",
        ),
        (
            "application/vnd.oasis.opendocument.spreadsheet",
            DocumentKind::Ods,
            "",
        ),
        (
            "application/vnd.oasis.opendocument.presentation",
            DocumentKind::Odp,
            "",
        ),
    ];
    let found = |(mime, kind, _): &(&str, DocumentKind, &str)| Detected {
        kind: FileKind::Document(*kind),
        mime: (*mime).to_string(),
    };
    if let Some(m) = mimetype.map(str::trim) {
        if let Some(k) = KINDS.iter().find(|(mime, ..)| *mime == m) {
            return Some(found(k));
        }
    }
    // OOXML: the content types part and the main part, both entries of the package.
    let names: Vec<&str> = names.into_iter().collect();
    if !names.contains(&"[Content_Types].xml") {
        return None;
    }
    KINDS
        .iter()
        .filter(|(.., main)| !main.is_empty())
        .find(|(.., main)| names.contains(main))
        .map(found)
}

/// POSIX/GNU tar: "ustar" magic at 257, or (old v7 archives) a valid header checksum.
fn is_tar(head: &[u8]) -> bool {
    let Some(header) = head.get(..512) else {
        return false;
    };
    if header.get(257..262) == Some(b"ustar") {
        return true;
    }
    // An all-zero block has checksum 256 of spaces only; require a name too.
    tar_checksum_ok(header) && header.first().is_some_and(|b| *b != 0)
}

/// Whether a 512-byte tar header's stored checksum matches the sum of its bytes (the checksum
/// field itself counted as spaces).
pub fn tar_checksum_ok(header: &[u8]) -> bool {
    let Some(field) = header.get(148..156) else {
        return false;
    };
    let digits: String = field
        .iter()
        .take_while(|b| (b'0'..=b'7').contains(b) || **b == b' ')
        .filter(|b| **b != b' ')
        .map(|b| *b as char)
        .collect();
    let Ok(stored) = u32::from_str_radix(&digits, 8) else {
        return false;
    };
    let sum: u32 = header
        .iter()
        .take(512)
        .enumerate()
        .map(|(i, b)| {
            if (148..156).contains(&i) {
                u32::from(b' ')
            } else {
                u32::from(*b)
            }
        })
        .sum();
    stored == sum
}

/// Text if it has no NUL bytes and decodes as UTF-8 (a sequence cut at the end of the sniffed
/// window is fine), or has a UTF-16 byte-order mark, or is mostly printable single-byte text.
pub fn looks_like_text(head: &[u8]) -> bool {
    if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
        return true;
    }
    if head.contains(&0) {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) if e.error_len().is_none() => true,
        Err(_) => {
            let printable = head
                .iter()
                .filter(|b| matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7e | 0xa0..=0xff))
                .count();
            printable * 100 >= head.len() * 95
        }
    }
}

fn starts_with_tag(head: &[u8], tag: &[u8]) -> bool {
    let lower: Vec<u8> = head.iter().take(1024).map(u8::to_ascii_lowercase).collect();
    lower.windows(tag.len()).any(|w| w == tag)
}

/// Header names that only mail (and news) starts with: one of them and one more known header
/// make a message; a `.eml`/`.mbox` name needs one known header.
const MAIL_HEADERS: [&str; 7] = [
    "from",
    "received",
    "message-id",
    "mime-version",
    "return-path",
    "delivered-to",
    "dkim-signature",
];
const OTHER_MAIL_HEADERS: [&str; 12] = [
    "to",
    "cc",
    "subject",
    "date",
    "reply-to",
    "in-reply-to",
    "references",
    "content-type",
    "content-transfer-encoding",
    "sender",
    "x-mailer",
    "thread-topic",
];

/// A message ([`ContainerKind::Mail`]) or a mailbox ([`ContainerKind::Mbox`]), told by the
/// shape of the header block at the start of `head`: every line up to the first blank one a
/// `Name: value` header or its continuation, with mail's own header names among them.
fn mail_kind(head: &[u8], ext: &str) -> Option<ContainerKind> {
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let (kind, block) = match text.strip_prefix(b"From ") {
        Some(rest) => {
            let at = rest.iter().position(|&b| b == b'\n')?;
            (ContainerKind::Mbox, rest.get(at + 1..)?)
        }
        None => (ContainerKind::Mail, text),
    };
    let named = matches!(ext, "eml" | "mbox" | "mbx" | "mail");
    is_header_block(block, named).then_some(kind)
}

fn is_header_block(block: &[u8], named: bool) -> bool {
    let mut lines = block.split(|&b| b == b'\n').peekable();
    let (mut own, mut other, mut first) = (0, 0, true);
    while let Some(line) = lines.next() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let cut_by_head = lines.peek().is_none();
        if line.starts_with(b" ") || line.starts_with(b"\t") {
            if first {
                return false;
            }
            continue;
        }
        first = false;
        let name = match line.iter().position(|&b| b == b':') {
            Some(n) if (1..=76).contains(&n) => line.get(..n).unwrap_or_default(),
            _ if cut_by_head => break,
            _ => return false,
        };
        if !name.iter().all(|b| b.is_ascii_graphic()) {
            return false;
        }
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        if MAIL_HEADERS.contains(&name.as_str()) {
            own += 1;
        } else if OTHER_MAIL_HEADERS.contains(&name.as_str()) {
            other += 1;
        }
    }
    if named {
        own + other >= 1
    } else {
        own >= 1 && own + other >= 2
    }
}

fn text_kind(head: &[u8], ext: &str, name: &str) -> TextKind {
    if is_man_page(&String::from_utf8_lossy(head), name) {
        return TextKind::Man;
    }
    let trimmed = head
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(head)
        .trim_ascii_start();
    let lower: Vec<u8> = trimmed
        .iter()
        .take(256)
        .map(u8::to_ascii_lowercase)
        .collect();
    if lower.starts_with(b"<!doctype html") || lower.starts_with(b"<html") {
        return TextKind::Html;
    }
    match ext {
        "html" | "htm" | "xhtml" => return TextKind::Html,
        "md" | "markdown" | "mdown" | "mkd" => return TextKind::Markdown,
        "csv" => return TextKind::Csv,
        "tsv" | "tab" => return TextKind::Tsv,
        "json" | "geojson" | "jsonl" | "ndjson" => return TextKind::Json,
        "xml" | "xsd" | "xsl" | "xslt" | "rss" | "atom" | "svg" | "xlf" | "docbook" => {
            return TextKind::Xml
        }
        _ => {}
    }
    if lower.starts_with(b"<?xml") {
        return TextKind::Xml;
    }
    if (lower.starts_with(b"{") || lower.starts_with(b"["))
        && serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_ok()
    {
        return TextKind::Json;
    }
    TextKind::Plain
}

/// Whether a text file is a manual page: its name ends in a manual section (`ls.1`,
/// `printf.3p`, `git.1.in`…) or `.man`, and its first request is `.TH`/`.Dd`, or a comment
/// (`.\"`, `'\"`) before one, or the name says so and a `.SH`/`.Sh` comes early.
pub fn is_man_page(head: &str, name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    let ext = base.rsplit_once('.').map_or("", |(_, e)| e);
    let named = ext == "man"
        || ext
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() && c != '0')
            && ext.len() <= 4
            && ext.chars().skip(1).all(|c| c.is_ascii_alphanumeric());
    let mut requests = head
        .lines()
        .map(str::trim_start)
        .filter(|l| !l.is_empty())
        .filter(|l| !(l.starts_with(".\\\"") || l.starts_with("'\\\"") || *l == "."));
    let first = requests.next().unwrap_or("");
    let opens = first.starts_with(".TH ") || first.starts_with(".Dd") || first.starts_with(".TH\t");
    opens
        || named
            && head
                .lines()
                .take(200)
                .any(|l| l.starts_with(".SH") || l.starts_with(".Sh"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zip of `parts`, each stored (no compression) or deflated.
    fn zip_with(parts: &[(&str, &[u8])], stored: bool) -> Vec<u8> {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let method = if stored {
            zip::CompressionMethod::Stored
        } else {
            zip::CompressionMethod::Deflated
        };
        for (name, body) in parts {
            w.start_file(
                *name,
                zip::write::SimpleFileOptions::default().compression_method(method),
            )
            .unwrap();
            w.write_all(body).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn a_zip_is_an_office_package_by_its_entries_never_by_bytes_inside_them() {
        let docx = zip_with(
            &[
                ("[Content_Types].xml", b"<Types/>"),
                ("_rels/.rels", b"<Relationships/>"),
                ("word/document.xml", b"<w:document/>"),
            ],
            false,
        );
        let kind = |bytes: &[u8], name: &str| detect(bytes, name).kind;
        let docx_kind = FileKind::Document(DocumentKind::Docx);
        let archive = FileKind::Container(ContainerKind::Zip);
        assert_eq!(kind(&docx, "a.docx"), docx_kind);
        assert_eq!(kind(&docx, "a.zip"), docx_kind);
        // Python's zipfile default: stored. The docx's own headers lie in the archive's bytes.
        for stored in [true, false] {
            let outer = zip_with(
                &[("crane-safety.docx", &docx), ("readme.txt", b"read me")],
                stored,
            );
            assert_eq!(kind(&outer, "bundle.zip"), archive, "stored {stored}");
            assert_eq!(
                package_kind(["crane-safety.docx", "readme.txt"], None),
                None
            );
        }
        // A zip named .docx holding plain files is an archive.
        let plain = zip_with(&[("notes.txt", b"n"), ("word/document.xml", b"x")], true);
        assert_eq!(kind(&plain, "fake.docx"), archive);
        // An OOXML package with extra members is still the document.
        let extra = zip_with(
            &[
                ("[Content_Types].xml", b"<Types/>"),
                ("word/document.xml", b"<w:document/>"),
                ("customXml/item1.xml", b"<x/>"),
                ("attachments/photo.jpg", b"\xff\xd8"),
            ],
            true,
        );
        assert_eq!(kind(&extra, "x.docx"), docx_kind);
        // ODF: a stored `mimetype` first entry; EPUB the same way, its own kind kept whole.
        let odt = zip_with(
            &[
                ("mimetype", b"application/vnd.oasis.opendocument.text"),
                ("content.xml", b"<office:document-content/>"),
            ],
            true,
        );
        assert_eq!(kind(&odt, "x.odt"), FileKind::Document(DocumentKind::Odt));
        let epub = zip_with(
            &[
                ("mimetype", b"application/epub+zip"),
                ("OEBPS/chapter1.xhtml", b"<html/>"),
            ],
            true,
        );
        let found = detect(&epub, "book.epub");
        assert_eq!(
            (found.kind, found.mime.as_str()),
            (FileKind::Other, "application/epub+zip")
        );
        // A JAR is a zip: its members are looked at one by one.
        let jar = zip_with(
            &[
                ("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\n"),
                ("app/Main.class", b"\xca\xfe\xba\xbe"),
            ],
            false,
        );
        assert_eq!(kind(&jar, "app.jar"), archive);
    }

    /// `n` MPEG-1 layer III frames of 128 kbit/s at 44.1 kHz (417 bytes each, no padding).
    fn mp3_frames(n: usize, sync1: u8) -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..n {
            let mut frame = vec![0x55u8; 417];
            frame[0] = 0xFF;
            frame[1] = sync1;
            frame[2] = 0x90;
            frame[3] = 0x64;
            out.extend_from_slice(&frame);
        }
        out
    }

    #[test]
    fn mp3_without_id3_is_audio() {
        for sync1 in [0xFB, 0xFA] {
            let d = detect(&mp3_frames(3, sync1), "track");
            assert_eq!(
                (d.kind, d.mime.as_str()),
                (FileKind::Audio, "audio/mpeg"),
                "{sync1:x}"
            );
        }
        // Zero padding before the first frame.
        let mut padded = vec![0u8; 100];
        padded.extend(mp3_frames(3, 0xFB));
        assert_eq!(detect(&padded, "x.bin").kind, FileKind::Audio);
        // One frame header alone counts for a .mp3 name only.
        let one = mp3_frames(1, 0xFB);
        let head = &one[..200];
        assert_eq!(detect(head, "a.mp3").kind, FileKind::Audio);
        assert_ne!(detect(head, "a.bin").kind, FileKind::Audio);
        // Bytes that only start like a frame are not audio.
        assert_ne!(
            detect(&[0xFF, 0xFB, 0xF0, 0, 1, 2], "a.mp3").kind,
            FileKind::Audio
        );
        assert_ne!(
            detect(b"\xff\xfb\x90 not a frame at all", "a").kind,
            FileKind::Audio
        );
    }

    #[test]
    fn magic_beats_extension() {
        assert_eq!(
            detect(b"%PDF-1.7\n...", "notes.txt").kind,
            FileKind::Document(DocumentKind::Pdf)
        );
        assert_eq!(
            detect(&[0x1f, 0x8b, 8, 0], "x.txt").kind,
            FileKind::Container(ContainerKind::Gzip)
        );
        assert_eq!(
            detect(b"hello world\n", "picture.png").kind,
            FileKind::Text(TextKind::Plain)
        );
        assert_eq!(
            detect(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "x.txt").kind,
            FileKind::Image
        );
    }

    #[test]
    fn mail_is_told_by_its_header_block() {
        let mail = |head: &[u8], name: &str| match detect(head, name).kind {
            FileKind::Container(k) => Some(k),
            _ => None,
        };
        let eml = b"Return-Path: <a@x.org>\r\nReceived: from mx\r\n\tby y; Mon\r\nFrom: A <a@x.org>\r\nSubject: Hi\r\n\r\nbody";
        assert_eq!(mail(eml, "noext"), Some(ContainerKind::Mail));
        let mbox = b"From a@x.org Mon Jan  1 00:00:00 2024\nFrom: a@x.org\nTo: b@y.org\n\nhi\n";
        assert_eq!(mail(mbox, "box"), Some(ContainerKind::Mbox));
        // Needs mail's own headers unless the name says so.
        assert_eq!(
            mail(b"Subject: notes\nDate: today\n\ntext", "notes.txt"),
            None
        );
        assert_eq!(
            mail(b"Subject: notes\nDate: today\n\ntext", "notes.eml"),
            Some(ContainerKind::Mail)
        );
        // Prose that starts like a header is not a message.
        assert_eq!(
            mail(b"From: the start\nthis is prose, not mail\n", "a"),
            None
        );
        assert_eq!(mail(b"From here we go\nTo: x\n", "a"), None);
        assert_eq!(mail(b"Package: x\nVersion: 1\n\n", "control"), None);
        let ole = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0];
        assert_eq!(mail(&ole, "note.msg"), Some(ContainerKind::Msg));
    }

    #[test]
    fn text_kinds_use_the_name_as_a_hint() {
        assert_eq!(
            detect(b"a,b\n1,2\n", "t.csv").kind,
            FileKind::Text(TextKind::Csv)
        );
        assert_eq!(
            detect(b"# Title\n", "r.md").kind,
            FileKind::Text(TextKind::Markdown)
        );
        assert_eq!(
            detect(b"{\"a\": 1}", "noext").kind,
            FileKind::Text(TextKind::Json)
        );
        assert_eq!(
            detect(b"<!DOCTYPE html><html>", "page").kind,
            FileKind::Text(TextKind::Html)
        );
        assert_eq!(
            detect(b"<?xml version=\"1.0\"?><a/>", "data").kind,
            FileKind::Text(TextKind::Xml)
        );
        assert_eq!(
            detect(b"\0\x01\x02\x03garbage", "x.txt").kind,
            FileKind::Other
        );
    }

    #[test]
    fn tar_is_recognised_by_magic_or_checksum() {
        let mut h = [0u8; 512];
        h[..5].copy_from_slice(b"a.txt");
        h[257..262].copy_from_slice(b"ustar");
        assert!(is_tar(&h));
        let mut v7 = [0u8; 512];
        v7[..5].copy_from_slice(b"a.txt");
        let sum: u32 = v7.iter().map(|b| u32::from(*b)).sum::<u32>() + 8 * 32;
        let field = format!("{sum:06o}\0 ");
        v7[148..156].copy_from_slice(field.as_bytes());
        assert!(is_tar(&v7));
        assert!(!is_tar(&[0u8; 512]));
        assert!(!is_tar(b"short"));
    }
}
