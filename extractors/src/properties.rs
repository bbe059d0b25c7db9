//! A file's descriptive properties — title, author, subject, keywords, description, album … —
//! from wherever its format keeps them: a PDF's Info dictionary, OOXML core properties
//! (`docProps/core.xml`), ODF `meta.xml`, audio and video tags (ID3, Vorbis comments, MP4
//! `ilst`, RIFF INFO, APE; read by `lofty`), a picture's EXIF (read by `kamadak-exif`), its
//! XMP packet (Dublin Core, IPTC and Photoshop fields: caption, alt text, headline, keywords)
//! and a PNG's text chunks (read by `png`).
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
        FileKind::Image => {
            // EXIF first (a camera's own words), then what an editor or a stock library
            // wrote: a PNG's text chunks and the XMP packet (its caption, alt text, keywords).
            let mut props = exif(bytes);
            png_text(bytes, &mut props);
            if let Some(packet) = xmp_packet(bytes) {
                xmp(packet, &mut props);
            }
            props
        }
        _ => Properties::new(),
    }
}

/// The most bytes an XMP packet is read from, and a PNG text chunk is inflated to.
const MAX_XMP_BYTES: usize = 256 * 1024;

/// The XMP packet embedded in a picture (JPEG APP1, PNG iTXt, TIFF, WebP, GIF …): from
/// `<x:xmpmeta` to its end tag, at most [`MAX_XMP_BYTES`], found wherever it lies.
fn xmp_packet(bytes: &[u8]) -> Option<&[u8]> {
    let start = memchr::memmem::find(bytes, b"<x:xmpmeta")?;
    let rest = bytes.get(start..)?;
    let window = rest.get(..rest.len().min(MAX_XMP_BYTES))?;
    let end = memchr::memmem::find(window, b"</x:xmpmeta>")? + b"</x:xmpmeta>".len();
    window.get(..end)
}

/// The describing fields of an XMP packet: `dc:title`, `dc:description` (a caption),
/// `dc:subject` (keywords), `dc:creator`, `photoshop:Headline`, and IPTC's alt text and
/// extended description for accessibility, whether written as elements (with their
/// `rdf:Alt`/`rdf:Bag` lists inside) or as attributes of `rdf:Description`.
fn xmp(packet: &[u8], props: &mut Properties) {
    use quick_xml::events::Event;
    fn key_of(local: &[u8]) -> Option<&'static str> {
        Some(match local {
            b"title" => "title",
            b"description" => "description",
            b"subject" => "keywords",
            b"creator" => "author",
            b"Headline" => "headline",
            b"AltTextAccessibility" => "alt text",
            b"ExtDescrAccessibility" => "long description",
            _ => return None,
        })
    }
    let mut reader = quick_xml::Reader::from_reader(packet);
    // The field being read, the depth it opened at, and its values (one per `rdf:li`).
    let mut current: Option<(&'static str, usize)> = None;
    let mut values: Vec<String> = Vec::new();
    let mut depth = 0usize;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                depth += 1;
                let name = e.name();
                let local = crate::xmlutil::local(name.as_ref());
                if current.is_none() {
                    if let Some(key) = key_of(local) {
                        current = Some((key, depth));
                        values.clear();
                        values.push(String::new());
                    } else if local == b"Description" {
                        xmp_attributes(&e, reader.decoder(), props, key_of);
                    }
                } else if local == b"li" && values.last().is_some_and(|v| !v.is_empty()) {
                    values.push(String::new());
                }
            }
            Ok(Event::Empty(e)) if current.is_none() => {
                if crate::xmlutil::local(e.name().as_ref()) == b"Description" {
                    xmp_attributes(&e, reader.decoder(), props, key_of);
                }
            }
            Ok(Event::Text(t)) => {
                if let (Some(_), Some(value)) = (current, values.last_mut()) {
                    if value.len() < MAX_VALUE_BYTES * 2 {
                        value.push_str(&t.decode().unwrap_or_default());
                    }
                }
            }
            Ok(Event::GeneralRef(r)) => {
                if let (Some(_), Some(value)) = (current, values.last_mut()) {
                    value.push_str(&crate::xmlutil::resolve(&r));
                }
            }
            Ok(Event::End(_)) => {
                if let Some((key, at)) = current {
                    if at == depth {
                        let parts: Vec<&str> = values
                            .iter()
                            .map(|v| v.trim())
                            .filter(|v| !v.is_empty())
                            .take(32)
                            .collect();
                        // A title or caption in several languages: the first (x-default).
                        let value = if key == "keywords" || key == "author" {
                            parts.join(", ")
                        } else {
                            parts.first().map(|v| v.to_string()).unwrap_or_default()
                        };
                        put(props, key, &value);
                        current = None;
                    }
                }
                depth = depth.saturating_sub(1);
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

/// The describing fields written as attributes of an `rdf:Description`
/// (`photoshop:Headline="…"`).
fn xmp_attributes(
    element: &quick_xml::events::BytesStart<'_>,
    decoder: quick_xml::encoding::Decoder,
    props: &mut Properties,
    key_of: fn(&[u8]) -> Option<&'static str>,
) {
    for attribute in element.attributes().flatten().take(64) {
        let name = attribute.key;
        if let Some(key) = key_of(crate::xmlutil::local(name.as_ref())) {
            if let Ok(value) = attribute.decode_and_unescape_value(decoder) {
                put(props, key, &value);
            }
        }
    }
}

/// A PNG's text chunks (`tEXt`, `zTXt`, `iTXt`) before its image data: `Title`,
/// `Description`, `Comment`, `Author`, `Subject`, `Keywords` by their registered keywords,
/// and an XMP packet kept in `XML:com.adobe.xmp`. Compressed text is inflated to at most
/// [`MAX_XMP_BYTES`]; the decoder may allocate at most 8 MiB.
fn png_text(bytes: &[u8], props: &mut Properties) {
    if !bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return;
    }
    let limits = png::Limits {
        bytes: 8 * 1024 * 1024,
    };
    let Ok(reader) = png::Decoder::new_with_limits(Cursor::new(bytes), limits).read_info() else {
        return;
    };
    let info = reader.info();
    let mut texts: Vec<(String, String)> = Vec::new();
    for chunk in info.uncompressed_latin1_text.iter().take(64) {
        texts.push((chunk.keyword.clone(), chunk.text.clone()));
    }
    for chunk in info.compressed_latin1_text.iter().take(64) {
        let mut chunk = chunk.clone();
        if chunk.decompress_text_with_limit(MAX_XMP_BYTES).is_ok() {
            if let Ok(text) = chunk.get_text() {
                texts.push((chunk.keyword.clone(), text));
            }
        }
    }
    for chunk in info.utf8_text.iter().take(64) {
        let mut chunk = chunk.clone();
        if chunk.decompress_text_with_limit(MAX_XMP_BYTES).is_ok() {
            if let Ok(text) = chunk.get_text() {
                texts.push((chunk.keyword.clone(), text));
            }
        }
    }
    for (keyword, text) in texts {
        let key = match keyword.as_str() {
            "Title" => "title",
            "Description" => "description",
            "Comment" => "comment",
            "Author" => "author",
            "Subject" => "subject",
            "Keywords" => "keywords",
            "XML:com.adobe.xmp" => {
                if let Some(packet) = xmp_packet(text.as_bytes()) {
                    xmp(packet, props);
                }
                continue;
            }
            _ => continue,
        };
        put(props, key, &text);
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

    /// An XMP packet as Adobe's tools and stock libraries write it: the caption and title in
    /// language alternatives, keywords in a bag, the headline as an attribute.
    const XMP: &str = r#"<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"
  xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" photoshop:Headline="Penguins of Palmer Station"
  xmlns:Iptc4xmpCore="http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/">
 <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Three penguins</rdf:li><rdf:li xml:lang="de">Drei Pinguine</rdf:li></rdf:Alt></dc:title>
 <dc:description><rdf:Alt><rdf:li xml:lang="x-default">Cartoon of the Chinstrap, Gentoo &amp; Adelie penguin species</rdf:li></rdf:Alt></dc:description>
 <dc:subject><rdf:Bag><rdf:li>penguins</rdf:li><rdf:li>Antarctica</rdf:li><rdf:li>artwork</rdf:li></rdf:Bag></dc:subject>
 <Iptc4xmpCore:AltTextAccessibility><rdf:Alt><rdf:li xml:lang="x-default">Three cartoon penguins side by side</rdf:li></rdf:Alt></Iptc4xmpCore:AltTextAccessibility>
</rdf:Description></rdf:RDF></x:xmpmeta>
<?xpacket end="w"?>"#;

    fn assert_described(p: &Properties) {
        assert_eq!(
            p.get("title").map(String::as_str),
            Some("Three penguins"),
            "{p:?}"
        );
        assert_eq!(
            p.get("description").map(String::as_str),
            Some("Cartoon of the Chinstrap, Gentoo & Adelie penguin species"),
            "{p:?}"
        );
        assert_eq!(
            p.get("keywords").map(String::as_str),
            Some("penguins, Antarctica, artwork"),
            "{p:?}"
        );
        assert_eq!(
            p.get("headline").map(String::as_str),
            Some("Penguins of Palmer Station"),
            "{p:?}"
        );
        assert_eq!(
            p.get("alt text").map(String::as_str),
            Some("Three cartoon penguins side by side"),
            "{p:?}"
        );
    }

    fn png_with(text: &[(&str, &str, u8)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, 2, 2);
        encoder.set_color(png::ColorType::Grayscale);
        for (keyword, value, kind) in text {
            let (k, v) = (keyword.to_string(), value.to_string());
            match kind {
                0 => encoder.add_text_chunk(k, v),
                1 => encoder.add_ztxt_chunk(k, v),
                _ => encoder.add_itxt_chunk(k, v),
            }
            .expect("a text chunk");
        }
        let mut writer = encoder.write_header().expect("a PNG header");
        writer.write_image_data(&[0, 255, 255, 0]).expect("pixels");
        writer.finish().expect("a PNG");
        out
    }

    #[test]
    fn a_jpegs_xmp_caption_alt_text_and_keywords() {
        // A real JPEG with the packet in its APP1 segment, right after the SOI marker.
        let mut jpeg = Vec::new();
        image::DynamicImage::new_luma8(8, 8)
            .write_to(&mut Cursor::new(&mut jpeg), image::ImageFormat::Jpeg)
            .expect("a JPEG");
        let mut app1 = b"http://ns.adobe.com/xap/1.0/\0".to_vec();
        app1.extend(XMP.as_bytes());
        let mut with_xmp = jpeg.get(..2).expect("SOI").to_vec();
        with_xmp.extend([0xFF, 0xE1]);
        with_xmp.extend(((app1.len() + 2) as u16).to_be_bytes());
        with_xmp.extend(&app1);
        with_xmp.extend(jpeg.get(2..).expect("the rest"));
        assert!(
            image::load_from_memory(&with_xmp).is_ok(),
            "still a picture"
        );
        assert_described(&read(FileKind::Image, &with_xmp));
    }

    #[test]
    fn a_pngs_text_chunks_and_its_xmp() {
        let p = read(
            FileKind::Image,
            &png_with(&[
                ("Title", "Harbour chart", 0),
                ("Description", "Soundings of the inner harbour", 1),
                ("Author", "Ingrid Solberg", 2),
                ("Software", "not a property", 0),
            ]),
        );
        assert_eq!(
            p.get("title").map(String::as_str),
            Some("Harbour chart"),
            "{p:?}"
        );
        assert_eq!(
            p.get("description").map(String::as_str),
            Some("Soundings of the inner harbour"),
            "{p:?}"
        );
        assert_eq!(
            p.get("author").map(String::as_str),
            Some("Ingrid Solberg"),
            "{p:?}"
        );
        assert_eq!(p.len(), 3, "{p:?}");
        // XMP in its iTXt chunk, compressed or not.
        for kind in [1u8, 2] {
            let p = read(
                FileKind::Image,
                &png_with(&[("XML:com.adobe.xmp", XMP, kind)]),
            );
            assert_described(&p);
        }
    }

    #[test]
    fn hostile_xmp_and_png_text_are_bounded() {
        // A packet without its end, one far too long, broken XML, a zTXt bomb: nothing
        // or bounded values, never a panic.
        let open = format!("junk<x:xmpmeta><dc:title>{}", "a ".repeat(400_000));
        assert!(read(FileKind::Image, open.as_bytes()).is_empty());
        let long = format!(
            "<x:xmpmeta><rdf:Description><dc:description>{}</dc:description></rdf:Description></x:xmpmeta>",
            "word ".repeat(10_000)
        );
        let p = read(FileKind::Image, long.as_bytes());
        assert!(
            p.get("description")
                .is_some_and(|d| d.len() <= MAX_VALUE_BYTES),
            "{p:?}"
        );
        let broken = "<x:xmpmeta><dc:title><rdf:li>A</dc:subject></x:xmpmeta>";
        let _ = read(FileKind::Image, broken.as_bytes());
        let bomb = "x".repeat(4 * 1024 * 1024);
        let p = read(FileKind::Image, &png_with(&[("Description", &bomb, 1)]));
        assert!(
            !p.contains_key("description"),
            "inflated past its bound: {p:?}"
        );
        let mut nested = String::from("<x:xmpmeta>");
        for _ in 0..10_000 {
            nested.push_str("<dc:title><rdf:li>");
        }
        nested.push_str("</x:xmpmeta>");
        let _ = read(FileKind::Image, nested.as_bytes());
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
