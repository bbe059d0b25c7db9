//! A file's descriptive properties — title, author, subject, keywords, description, album … —
//! from wherever its format keeps them: a PDF's Info dictionary, OOXML core properties
//! (`docProps/core.xml`), ODF `meta.xml`, audio and video tags (ID3, Vorbis comments, MP4
//! `ilst`, RIFF INFO, APE; read by `lofty`) and a picture's EXIF (read by `kamadak-exif`).
//!
//! They go into [`crate::Structure::properties`] and from there onto the file's card, so a
//! file is found by what its properties say even when it holds no text. Every value is
//! bounded ([`MAX_VALUE_BYTES`], [`MAX_PROPERTIES`]); a format without properties, or with
//! unreadable ones, gives none (never an error: properties are a bonus, not the content).

use std::collections::BTreeMap;
use std::io::Cursor;

use crate::detect::{DocumentKind, FileKind};

/// The properties of one file, by lowercase name (`title`, `author`, `subject`, `keywords`,
/// `description`, `album`, `genre`, `comment`).
pub type Properties = BTreeMap<String, String>;

/// The longest value kept, in bytes (cut at a character boundary).
pub const MAX_VALUE_BYTES: usize = 512;
/// The most properties kept for one file.
pub const MAX_PROPERTIES: usize = 16;

/// Add `value` under `key` unless it is empty or the file has [`MAX_PROPERTIES`] already:
/// whitespace runs become one space, control characters go, the value is cut at
/// [`MAX_VALUE_BYTES`]. A key already present keeps its first value.
pub(crate) fn put(props: &mut Properties, key: &str, value: &str) {
    if props.len() >= MAX_PROPERTIES || props.contains_key(key) {
        return;
    }
    let mut clean = String::new();
    for word in value
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
    {
        if clean.len() + word.len() + 1 > MAX_VALUE_BYTES {
            let room = MAX_VALUE_BYTES.saturating_sub(clean.len() + 1);
            let cut = (0..=room.min(word.len()))
                .rev()
                .find(|i| word.is_char_boundary(*i))
                .unwrap_or(0);
            if cut > 0 {
                if !clean.is_empty() {
                    clean.push(' ');
                }
                clean.push_str(&word[..cut]);
            }
            break;
        }
        if !clean.is_empty() {
            clean.push(' ');
        }
        clean.push_str(word);
    }
    if !clean.is_empty() {
        props.insert(key.to_string(), clean);
    }
}

/// The properties of a file of `kind` held in `bytes`, for the formats whose properties are
/// not read by their extractor (a PDF's are: see `pdf.rs`).
pub(crate) fn read(kind: FileKind, bytes: &[u8]) -> Properties {
    match kind {
        FileKind::Document(DocumentKind::Docx | DocumentKind::Xlsx | DocumentKind::Pptx) => {
            package_part(bytes, "docProps/core.xml")
        }
        FileKind::Document(DocumentKind::Odt | DocumentKind::Ods | DocumentKind::Odp) => {
            package_part(bytes, "meta.xml")
        }
        FileKind::Audio | FileKind::Video => media_tags(bytes),
        FileKind::Image => exif(bytes),
        _ => Properties::new(),
    }
}

/// The Dublin Core properties of an OOXML or ODF package's part `name`.
fn package_part(bytes: &[u8], name: &str) -> Properties {
    let Ok(mut zip) = crate::package::open_package("package", bytes) else {
        return Properties::new();
    };
    crate::package::part(&mut zip, name)
        .map(|xml| dublin_core(&xml))
        .unwrap_or_default()
}

/// `dc:title`, `dc:creator`, `dc:subject`, `dc:description`, `cp:keywords` (OOXML) and
/// `meta:keyword`, `meta:initial-creator` (ODF), matched by local name.
pub(crate) fn dublin_core(xml: &[u8]) -> Properties {
    use quick_xml::events::Event;
    let mut props = Properties::new();
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut current: Option<&'static str> = None;
    let mut text = String::new();
    let mut keywords: Vec<String> = Vec::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                current = match crate::xmlutil::local(e.name().as_ref()) {
                    b"title" => Some("title"),
                    b"creator" | b"initial-creator" => Some("author"),
                    b"subject" => Some("subject"),
                    b"description" => Some("description"),
                    b"keywords" | b"keyword" => Some("keywords"),
                    _ => None,
                };
                text.clear();
            }
            Ok(Event::Text(t)) if current.is_some() && text.len() < MAX_VALUE_BYTES * 2 => {
                text.push_str(&t.decode().unwrap_or_default());
            }
            Ok(Event::GeneralRef(r)) if current.is_some() => {
                text.push_str(&crate::xmlutil::resolve(&r));
            }
            Ok(Event::End(_)) => {
                match current.take() {
                    Some("keywords") if keywords.len() < 32 => keywords.push(text.clone()),
                    Some(key) => put(&mut props, key, &text),
                    None => {}
                }
                text.clear();
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    put(&mut props, "keywords", &keywords.join(", "));
    props
}

/// Audio and video tags, whatever the container (lofty guesses it from the bytes). Cover
/// art and stream properties are not read.
fn media_tags(bytes: &[u8]) -> Properties {
    use lofty::config::ParseOptions;
    use lofty::file::TaggedFileExt;
    use lofty::tag::{ItemKey, ItemValue};
    let mut props = Properties::new();
    let options = ParseOptions::new()
        .read_properties(false)
        .read_cover_art(false);
    let Ok(probe) = lofty::probe::Probe::new(Cursor::new(bytes)).guess_file_type() else {
        return props;
    };
    let Ok(tagged) = probe.options(options).read() else {
        return props;
    };
    let wanted = [
        (ItemKey::TrackTitle, "title"),
        (ItemKey::TrackArtist, "author"),
        (ItemKey::AlbumTitle, "album"),
        (ItemKey::TrackSubtitle, "subject"),
        (ItemKey::Description, "description"),
        (ItemKey::Genre, "genre"),
        (ItemKey::Comment, "comment"),
    ];
    for tag in tagged.tags() {
        for (key, name) in &wanted {
            if let Some(value) =
                tag.items()
                    .find(|i| &i.key() == key)
                    .and_then(|i| match i.value() {
                        ItemValue::Text(t) | ItemValue::Locator(t) => Some(t.as_str()),
                        ItemValue::Binary(_) => None,
                    })
            {
                put(&mut props, name, value);
            }
        }
    }
    props
}

/// A picture's EXIF description, title, subject, keywords, comment and artist, the camera
/// (make and model) and when it was taken.
fn exif(bytes: &[u8]) -> Properties {
    use exif::{In, Tag, Value};
    let mut props = Properties::new();
    let Ok(data) = exif::Reader::new().read_from_container(&mut Cursor::new(bytes)) else {
        return props;
    };
    let wanted = [
        (Tag::ImageDescription, "description"),
        (Tag::Artist, "author"),
        (Tag::UserComment, "comment"),
    ];
    for (tag, name) in wanted {
        if let Some(field) = data.get_field(tag, In::PRIMARY) {
            let text = match &field.value {
                Value::Ascii(parts) => parts
                    .iter()
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
                Value::Undefined(raw, _) => user_comment(raw),
                _ => continue,
            };
            put(&mut props, name, &text);
        }
    }
    // The camera that took it and when: what a person looking for a photo remembers
    // ("the one from the Canon", "taken in January 2020").
    let ascii = |tag: Tag| match data.get_field(tag, In::PRIMARY).map(|f| &f.value) {
        Some(Value::Ascii(parts)) => Some(
            parts
                .iter()
                .map(|p| String::from_utf8_lossy(p).trim().to_string())
                .collect::<Vec<_>>()
                .join(" "),
        )
        .filter(|s| !s.trim().is_empty()),
        _ => None,
    };
    let camera = match (ascii(Tag::Make), ascii(Tag::Model)) {
        // Models often repeat their make: "Canon" + "Canon PowerShot A80".
        (Some(make), Some(model)) if model.to_lowercase().starts_with(&make.to_lowercase()) => {
            Some(model)
        }
        (Some(make), Some(model)) => Some(format!("{make} {model}")),
        (make, model) => make.or(model),
    };
    if let Some(camera) = camera {
        put(&mut props, "camera", &camera);
    }
    if let Some(taken) = ascii(Tag::DateTimeOriginal).or_else(|| ascii(Tag::DateTime)) {
        put(&mut props, "taken", &exif_date(&taken));
    }
    // Windows' XP* tags: UTF-16LE in BYTE fields.
    for (number, name) in [
        (0x9c9b, "title"),
        (0x9c9c, "comment"),
        (0x9c9d, "author"),
        (0x9c9e, "keywords"),
        (0x9c9f, "subject"),
    ] {
        let tag = Tag(exif::Context::Tiff, number);
        if let Some(Value::Byte(raw)) = data.get_field(tag, In::PRIMARY).map(|f| &f.value) {
            put(&mut props, name, &utf16(raw, u16::from_le_bytes));
        }
    }
    props
}

/// An EXIF date (`2020:01:24 23:11:53`) as people and searches write it (`2020-01-24
/// 23:11:53`); anything else as it is.
fn exif_date(value: &str) -> String {
    let b = value.as_bytes();
    let is_exif = b.len() >= 10
        && b.get(4) == Some(&b':')
        && b.get(7) == Some(&b':')
        && b.get(..4).is_some_and(|y| y.iter().all(u8::is_ascii_digit));
    match (is_exif, value.get(..4), value.get(5..7), value.get(8..)) {
        (true, Some(y), Some(m), Some(rest)) => format!("{y}-{m}-{rest}"),
        _ => value.to_string(),
    }
}

/// UTF-16 text up to its first NUL, each unit read from two bytes by `unit`.
fn utf16(raw: &[u8], unit: fn([u8; 2]) -> u16) -> String {
    let units: Vec<u16> = raw
        .chunks_exact(2)
        .map(|c| {
            unit([
                c.first().copied().unwrap_or(0),
                c.get(1).copied().unwrap_or(0),
            ])
        })
        .take_while(|u| *u != 0)
        .collect();
    String::from_utf16_lossy(&units)
}

/// EXIF `UserComment`: an 8-byte character-code prefix, then the text.
fn user_comment(raw: &[u8]) -> String {
    let (code, text) = raw.split_at(raw.len().min(8));
    if code.starts_with(b"UNICODE") {
        utf16(text, u16::from_be_bytes)
    } else {
        String::from_utf8_lossy(text)
            .trim_end_matches('\0')
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_cleans_bounds_and_keeps_the_first() {
        let mut p = Properties::new();
        put(&mut p, "title", "  Annual\n report\t2023\u{7}  ");
        put(&mut p, "title", "ignored");
        put(&mut p, "author", "   ");
        assert_eq!(p["title"], "Annual report 2023");
        assert!(!p.contains_key("author"));
        put(&mut p, "subject", &"ä".repeat(1000));
        assert!(p["subject"].len() <= MAX_VALUE_BYTES);
        assert!(p["subject"].chars().all(|c| c == 'ä'));
        for i in 0..40 {
            put(&mut p, &format!("k{i}"), "v");
        }
        assert_eq!(p.len(), MAX_PROPERTIES);
    }

    #[test]
    fn dublin_core_of_ooxml_and_odf() {
        let core = br#"<?xml version="1.0"?><cp:coreProperties xmlns:cp="c" xmlns:dc="d">
            <dc:title>Pump manual &amp; care</dc:title><dc:creator>Ingrid Solberg</dc:creator>
            <cp:keywords>pump, priming</cp:keywords><dc:description>How to</dc:description>
            </cp:coreProperties>"#;
        let p = dublin_core(core);
        assert_eq!(p["title"], "Pump manual & care");
        assert_eq!(p["author"], "Ingrid Solberg");
        assert_eq!(p["keywords"], "pump, priming");
        assert_eq!(p["description"], "How to");
        let meta = br#"<office:document-meta><office:meta><dc:title>Brief</dc:title>
            <meta:initial-creator>Jan</meta:initial-creator><meta:keyword>a</meta:keyword>
            <meta:keyword>b</meta:keyword></office:meta></office:document-meta>"#;
        let p = dublin_core(meta);
        assert_eq!(p["title"], "Brief");
        assert_eq!(p["author"], "Jan");
        assert_eq!(p["keywords"], "a, b");
        assert!(dublin_core(b"<not xml").is_empty());
    }

    #[test]
    fn a_photos_camera_and_date_taken() {
        use exif::{Field, In, Tag, Value};
        let field = |tag: Tag, text: &str| Field {
            tag,
            ifd_num: In::PRIMARY,
            value: Value::Ascii(vec![text.as_bytes().to_vec()]),
        };
        let tiff = |fields: &[Field]| {
            let mut writer = exif::experimental::Writer::new();
            for f in fields {
                writer.push_field(f);
            }
            let mut out = Cursor::new(Vec::new());
            writer.write(&mut out, false).expect("a TIFF with EXIF");
            out.into_inner()
        };
        let photo = tiff(&[
            field(Tag::Make, "Canon"),
            field(Tag::Model, "Canon PowerShot A80"),
            field(Tag::DateTimeOriginal, "2020:01:24 23:11:53"),
            field(Tag::ImageDescription, "Harbour at dawn"),
        ]);
        let p = read(FileKind::Image, &photo);
        assert_eq!(
            p.get("camera").map(String::as_str),
            Some("Canon PowerShot A80"),
            "{p:?}"
        );
        assert_eq!(
            p.get("taken").map(String::as_str),
            Some("2020-01-24 23:11:53"),
            "{p:?}"
        );
        assert_eq!(
            p.get("description").map(String::as_str),
            Some("Harbour at dawn")
        );
        // A model that does not repeat its make gets it in front; a bare make stands alone.
        let phone = tiff(&[field(Tag::Make, "Xiaomi"), field(Tag::Model, "Mi A3")]);
        let p = read(FileKind::Image, &phone);
        assert_eq!(
            p.get("camera").map(String::as_str),
            Some("Xiaomi Mi A3"),
            "{p:?}"
        );
        assert!(!p.contains_key("taken"), "{p:?}");
        let make = tiff(&[
            field(Tag::Make, "NIKON"),
            field(Tag::DateTime, "not a date"),
        ]);
        let p = read(FileKind::Image, &make);
        assert_eq!(p.get("camera").map(String::as_str), Some("NIKON"), "{p:?}");
        assert_eq!(
            p.get("taken").map(String::as_str),
            Some("not a date"),
            "{p:?}"
        );
    }

    #[test]
    fn id3_tags_of_an_mp3() {
        // ID3v2.3 with TIT2 and TPE1 (text encoding 0 = Latin-1), then one MPEG frame.
        let frame = |id: &[u8], text: &str| {
            let mut f = id.to_vec();
            f.extend(((text.len() + 1) as u32).to_be_bytes());
            f.extend([0, 0, 0]);
            f.extend(text.as_bytes());
            f
        };
        let mut frames = frame(b"TIT2", "Harbour bells at dawn");
        frames.extend(frame(b"TPE1", "Skerry Point Choir"));
        let size = frames.len() as u32;
        let mut mp3 = b"ID3\x03\x00\x00".to_vec();
        mp3.extend([
            ((size >> 21) & 0x7f) as u8,
            ((size >> 14) & 0x7f) as u8,
            ((size >> 7) & 0x7f) as u8,
            (size & 0x7f) as u8,
        ]);
        mp3.extend(frames);
        let mut mpeg = vec![0xFF, 0xFB, 0x90, 0x64];
        mpeg.resize(417, 0);
        for _ in 0..4 {
            mp3.extend(&mpeg);
        }
        let p = read(FileKind::Audio, &mp3);
        assert_eq!(
            p.get("title").map(String::as_str),
            Some("Harbour bells at dawn")
        );
        assert_eq!(
            p.get("author").map(String::as_str),
            Some("Skerry Point Choir")
        );
        assert!(read(FileKind::Audio, b"not audio at all").is_empty());
        assert!(read(FileKind::Image, b"\x89PNG\r\n\x1a\n").is_empty());
    }
}
