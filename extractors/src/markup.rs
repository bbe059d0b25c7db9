//! XML and HTML: the text a reader sees, grouped into objects that name the source lines they
//! came from. XML keeps its elements' attributes too (`key="value"`, a language tag as `[de]`,
//! before the element's text), where data XML keeps its names and values. HTML headings
//! (`h1`–`h6`) open sections; `script`, `style`, `template`, `noscript` and `head` (except
//! `title`) are not visible text and are dropped.

use std::fmt::Write as _;

use serde_json::json;

use crate::model::{ContentType, Structure};
use crate::objects::{
    lines_label, short_title, ObjectSink, Place, MAX_TEXT_OBJECT_BYTES, SECTION_SEPARATOR,
};
use crate::text::BLOCK_CHARS;
use crate::textcodec::decode;
use crate::{ExtractError, ExtractInput, Extraction, Extractor, Fragment};

pub(crate) struct Xml;
pub(crate) struct Html;

/// Collects text pieces with their source line into objects of about [`BLOCK_CHARS`].
struct Blocks<'s, 'a> {
    sink: &'s mut ObjectSink<'a>,
    encoding: &'static str,
    text: String,
    lines: Option<(u64, u64)>,
    section: Option<String>,
}

impl<'s, 'a> Blocks<'s, 'a> {
    /// Add `piece` (whitespace runs collapsed) from source line `line`. A piece longer than
    /// an object is flushed as it goes, so the text held here stays bounded.
    fn add(&mut self, piece: &str, line: u64) {
        let mut words = piece.split_whitespace().peekable();
        if words.peek().is_none() {
            return;
        }
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        let mut first = true;
        for word in words {
            if !first {
                self.text.push(' ');
            }
            first = false;
            self.text.push_str(word);
            self.lines = Some(match self.lines {
                Some((a, b)) => (a.min(line), b.max(line)),
                None => (line, line),
            });
            if self.text.len() >= MAX_TEXT_OBJECT_BYTES {
                self.flush();
                first = true;
            }
        }
        if self.text.len() >= BLOCK_CHARS {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let Some((a, b)) = self.lines.take() else {
            return;
        };
        let data = std::mem::take(&mut self.text);
        self.sink.push(
            ContentType::Text,
            data,
            Place {
                fragment: Fragment {
                    lines: Some((a, b)),
                    ..Fragment::default()
                },
                label: Some(lines_label(a, b)),
                section: self.section.clone(),
            },
            json!({ "encoding": self.encoding, "line_exact": false }),
        );
    }
}

/// 1-based line of byte offset `pos` in `text`, computed incrementally (offsets only grow).
struct LineCounter<'t> {
    text: &'t [u8],
    pos: usize,
    line: u64,
}

impl<'t> LineCounter<'t> {
    fn new(text: &'t str) -> Self {
        LineCounter {
            text: text.as_bytes(),
            pos: 0,
            line: 1,
        }
    }

    fn line_at(&mut self, pos: usize) -> u64 {
        if pos > self.pos {
            let end = pos.min(self.text.len());
            let newlines = self
                .text
                .get(self.pos..end)
                .map_or(0, |s| s.iter().filter(|b| **b == b'\n').count());
            self.line += newlines as u64;
            self.pos = end;
        }
        self.line
    }
}

impl Extractor for Xml {
    fn name(&self) -> &'static str {
        "xml"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        use quick_xml::events::Event;

        let decoded = decode(input.bytes);
        let mut reader = quick_xml::Reader::from_str(&decoded.text);
        reader.config_mut().check_end_names = false;
        let mut sink = ObjectSink::new(input.locator, input.file_hash);
        let mut blocks = Blocks {
            sink: &mut sink,
            encoding: decoded.encoding,
            text: String::new(),
            lines: None,
            section: None,
        };
        let mut counter = LineCounter::new(&decoded.text);
        let mut parse_error = None;
        // Text between two tags: entity references split it into several events.
        let mut run = String::new();
        let mut run_line = 1u64;
        loop {
            let pos = usize::try_from(reader.buffer_position()).unwrap_or(usize::MAX);
            let line = counter.line_at(pos);
            let append = |s: &str, run: &mut String, run_line: &mut u64| {
                if run.trim().is_empty() {
                    let leading = s.get(..s.len() - s.trim_start().len()).unwrap_or("");
                    *run_line = line + leading.matches('\n').count() as u64;
                }
                run.push_str(s);
            };
            match reader.read_event() {
                Ok(Event::Text(t)) => {
                    if let Ok(s) = t.decode() {
                        append(&s, &mut run, &mut run_line);
                    }
                }
                Ok(Event::CData(t)) => {
                    if let Ok(s) = t.decode() {
                        append(&s, &mut run, &mut run_line);
                    }
                }
                Ok(Event::GeneralRef(r)) => {
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => Some(c.to_string()),
                        _ => r.decode().ok().and_then(|name| {
                            quick_xml::escape::resolve_predefined_entity(&name).map(String::from)
                        }),
                    };
                    if let Some(s) = resolved {
                        append(&s, &mut run, &mut run_line);
                    }
                }
                Ok(Event::Eof) => break,
                Ok(Event::Start(e) | Event::Empty(e)) => {
                    blocks.add(&run, run_line);
                    run.clear();
                    // An element's attributes open the text it holds: in data XML they carry
                    // the names and values a question asks for (`type="…"`, `lang="de"`).
                    let attributes = attribute_text(&e, reader.decoder());
                    if !attributes.is_empty() {
                        run_line = line;
                        run.push_str(&attributes);
                        run.push(' ');
                    }
                }
                Ok(_) => {
                    blocks.add(&run, run_line);
                    run.clear();
                }
                Err(e) => {
                    parse_error = Some(e.to_string());
                    break;
                }
            }
        }
        blocks.add(&run, run_line);
        blocks.flush();
        if let Some(reason) = parse_error {
            if sink.objects.is_empty() {
                return Err(ExtractError::Malformed {
                    format: "xml".into(),
                    reason,
                });
            }
            for o in &mut sink.objects {
                o.metadata
                    .insert("parse_error".into(), reason.clone().into());
            }
        }
        Ok(Extraction {
            objects: sink.objects,
            structure: Structure {
                nodes: Vec::new(),
                line_count: Some(counter.line_at(usize::MAX)),
                ..Structure::default()
            },
        })
    }
}

/// Longest attribute value kept as text: longer ones are data (path data, encoded blobs,
/// style sheets), not words.
const MAX_ATTRIBUTE_VALUE_BYTES: usize = 200;

/// Longest attribute name kept.
const MAX_ATTRIBUTE_KEY_BYTES: usize = 64;

/// Attributes that hold drawing or styling, not words (SVG, XSL-FO, XHTML in XML).
const DRAWING_ATTRIBUTES: &[&str] = &[
    "d",
    "style",
    "transform",
    "points",
    "viewBox",
    "x",
    "y",
    "cx",
    "cy",
    "r",
    "fill",
    "stroke",
];

/// An element's attributes as text, `key="value"` separated by spaces (a language tag as
/// `[de]`): those whose value holds a word (two letters in a row, at most
/// [`MAX_ATTRIBUTE_VALUE_BYTES`]), without namespace declarations, schema hints and
/// drawing attributes; at most about [`MAX_TEXT_OBJECT_BYTES`] of them.
fn attribute_text(
    element: &quick_xml::events::BytesStart<'_>,
    decoder: quick_xml::encoding::Decoder,
) -> String {
    let mut out = String::new();
    for attribute in element.attributes().with_checks(false).flatten() {
        // One element's attributes make at most one text object.
        if out.len() >= MAX_TEXT_OBJECT_BYTES {
            break;
        }
        let key = String::from_utf8_lossy(attribute.key.as_ref());
        if key.len() > MAX_ATTRIBUTE_KEY_BYTES
            || key == "xmlns"
            || key.starts_with("xmlns:")
            || key.starts_with("xsi:")
            || DRAWING_ATTRIBUTES.contains(&key.as_ref())
        {
            continue;
        }
        let Ok(value) = attribute.decode_and_unescape_value(decoder) else {
            continue;
        };
        let value = value.trim();
        let has_word = value
            .chars()
            .zip(value.chars().skip(1))
            .any(|(a, b)| a.is_alphabetic() && b.is_alphabetic());
        if value.len() > MAX_ATTRIBUTE_VALUE_BYTES || !has_word {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        // A language tag marks the text that follows, compactly: `[de] Windows-Designpaket`.
        let _ = if key == "xml:lang" || key == "lang" {
            write!(out, "[{value}]")
        } else {
            write!(out, "{key}=\"{value}\"")
        };
    }
    out
}

const INVISIBLE: &[&str] = &[
    "script", "style", "template", "noscript", "head", "svg", "math", "iframe", "object",
];
const BLOCK_TAGS: &[&str] = &[
    "p",
    "div",
    "li",
    "tr",
    "br",
    "section",
    "article",
    "blockquote",
    "pre",
    "table",
    "ul",
    "ol",
    "dd",
    "dt",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "figure",
    "figcaption",
    "hr",
];

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

impl Extractor for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let decoded = decode(input.bytes);
        let source = decoded.text.as_str();
        let dom = tl::parse(source, tl::ParserOptions::default()).map_err(|e| {
            ExtractError::Malformed {
                format: "html".into(),
                reason: e.to_string(),
            }
        })?;
        let parser = dom.parser();
        let base = source.as_ptr() as usize;
        let offset_of = |bytes: &tl::Bytes<'_>| {
            bytes
                .as_bytes_borrowed()
                .map(|s| (s.as_ptr() as usize).saturating_sub(base))
        };

        let mut sink = ObjectSink::new(input.locator, input.file_hash);
        let mut nodes = Vec::new();
        let title: Option<String> = dom
            .query_selector("title")
            .and_then(|mut q| q.next())
            .and_then(|h| h.get(parser))
            .and_then(|n| n.as_tag().map(|t| text_under(t, parser)))
            .map(|t| short_title(without_icons(&html_escape::decode_html_entities(&t)).trim()))
            .filter(|t| !t.is_empty());
        let mut heading_path: Vec<(usize, String)> = Vec::new();
        let mut counter = LineCounter::new(source);
        let mut blocks = Blocks {
            sink: &mut sink,
            encoding: decoded.encoding,
            text: String::new(),
            lines: None,
            section: None,
        };
        // Running text of the current block element, flushed into `blocks` at block ends.
        let mut run = String::new();
        let mut run_line = 1u64;

        // Depth-first walk with an explicit stack: hostile nesting cannot overflow it.
        enum Step {
            Enter(tl::NodeHandle),
            EndBlock,
        }
        let mut stack: Vec<Step> = dom
            .children()
            .iter()
            .rev()
            .map(|h| Step::Enter(*h))
            .collect();
        while let Some(step) = stack.pop() {
            let handle = match step {
                Step::EndBlock => {
                    blocks.add(&run, run_line);
                    run.clear();
                    continue;
                }
                Step::Enter(h) => h,
            };
            let Some(node) = handle.get(parser) else {
                continue;
            };
            match node {
                tl::Node::Raw(bytes) => {
                    let raw = bytes.as_utf8_str();
                    if is_markup_residue(&raw) {
                        continue;
                    }
                    let text = without_icons(&html_escape::decode_html_entities(&raw));
                    if text.trim().is_empty() {
                        if !run.is_empty() {
                            run.push(' ');
                        }
                        continue;
                    }
                    if run.trim().is_empty() {
                        run_line = offset_of(bytes).map_or(run_line, |o| counter.line_at(o));
                    }
                    run.push_str(&text);
                }
                tl::Node::Comment(_) => {}
                tl::Node::Tag(tag) => {
                    let name = tag.name().as_utf8_str().to_ascii_lowercase();
                    if INVISIBLE.contains(&name.as_str()) || is_decoration(tag, &name) {
                        continue;
                    }
                    let line = offset_of(tag.raw()).map_or(run_line, |o| counter.line_at(o));
                    if let Some(level) = heading_level(&name) {
                        blocks.add(&run, run_line);
                        run.clear();
                        blocks.flush();
                        let text = without_icons(&html_escape::decode_html_entities(&text_under(
                            tag, parser,
                        )))
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ");
                        if text.is_empty() {
                            continue;
                        }
                        while heading_path.last().is_some_and(|(l, _)| *l >= level) {
                            heading_path.pop();
                        }
                        heading_path.push((level, short_title(&text)));
                        blocks.section = Some(
                            heading_path
                                .iter()
                                .map(|(_, t)| t.as_str())
                                .collect::<Vec<_>>()
                                .join(SECTION_SEPARATOR),
                        );
                        nodes.push(crate::text::section_at_line(
                            input.locator,
                            short_title(&text),
                            level,
                            line,
                        ));
                        blocks.add(&text, line);
                        continue;
                    }
                    if let Some(said) = picture_text(tag, &name) {
                        if run.trim().is_empty() {
                            run_line = line;
                        } else {
                            run.push(' ');
                        }
                        run.push_str(&said);
                        run.push(' ');
                        continue;
                    }
                    let is_block = BLOCK_TAGS.contains(&name.as_str());
                    if is_block {
                        blocks.add(&run, run_line);
                        run.clear();
                        stack.push(Step::EndBlock);
                    } else if matches!(name.as_str(), "td" | "th") && !run.is_empty() {
                        run.push_str(" | ");
                    }
                    let children = tag.children();
                    let kids: Vec<tl::NodeHandle> = children.top().iter().copied().collect();
                    stack.extend(kids.into_iter().rev().map(Step::Enter));
                }
            }
        }
        blocks.add(&run, run_line);
        blocks.flush();
        if let Some(t) = &title {
            for o in &mut sink.objects {
                o.metadata.insert("title".into(), t.clone().into());
            }
        }
        Ok(Extraction {
            objects: sink.objects,
            structure: Structure {
                nodes,
                line_count: Some(counter.line_at(usize::MAX)),
                ..Structure::default()
            },
        })
    }
}

/// Whether a raw text piece is markup the parser did not take as a tag: a document type
/// declaration (`<!DOCTYPE …>`, or the public identifier left of one), a comment or
/// conditional comment, a processing instruction or CDATA marker.
fn is_markup_residue(raw: &str) -> bool {
    let t = raw.trim_start();
    let upper: String = t.chars().take(16).collect::<String>().to_ascii_uppercase();
    upper.starts_with("<!")
        || upper.starts_with("<?")
        || upper.starts_with("!DOCTYPE")
        || upper.starts_with("DOCTYPE")
        || upper.starts_with("]]>")
        || upper.starts_with("-->")
        || t.contains("-//W3C//DTD")
}

/// `text` without icon-font glyphs: characters of Unicode's private use areas (Font
/// Awesome's link icon U+F0C1 in Sphinx headings, say), which stand for a picture, not a
/// word.
fn without_icons(text: &str) -> String {
    text.chars()
        .filter(
            |c| !matches!(u32::from(*c), 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD),
        )
        .collect()
}

/// What a picture shows, as its page says it in words: an `<img>`'s (or image map area's)
/// `alt` text, else its `title` ([`crate::xmlutil::picture_text`]), in the running text, so
/// that a search for what the picture shows finds the page holding it; `None` for no such
/// text (a decorative `alt=""`) or another element.
fn picture_text(tag: &tl::HTMLTag<'_>, name: &str) -> Option<String> {
    if !matches!(name, "img" | "area") {
        return None;
    }
    let attributes = tag.attributes();
    ["alt", "title"].into_iter().find_map(|key| {
        let value = attributes.get(key).flatten()?.as_utf8_str();
        crate::xmlutil::picture_text(&without_icons(&html_escape::decode_html_entities(&value)))
    })
}

/// Elements that decorate rather than say something: the permalink anchors Sphinx and
/// other generators put after headings (`<a class="headerlink">¶</a>`).
fn is_decoration(tag: &tl::HTMLTag<'_>, name: &str) -> bool {
    name == "a"
        && tag.attributes().class().is_some_and(|c| {
            c.as_utf8_str()
                .split_whitespace()
                .any(|c| c == "headerlink")
        })
}

/// The text under `tag`, like `tl`'s `inner_text` but walked with an explicit stack: that one
/// recurses, and hostile nesting would overflow the stack.
fn text_under(tag: &tl::HTMLTag<'_>, parser: &tl::Parser<'_>) -> String {
    let push_children = |stack: &mut Vec<tl::NodeHandle>, t: &tl::HTMLTag<'_>| {
        let at = stack.len();
        stack.extend(t.children().top().iter().copied());
        stack.get_mut(at..).unwrap_or(&mut []).reverse();
    };
    let mut out = String::new();
    let mut stack: Vec<tl::NodeHandle> = Vec::new();
    push_children(&mut stack, tag);
    while let Some(handle) = stack.pop() {
        match handle.get(parser) {
            Some(tl::Node::Raw(bytes)) => out.push_str(&bytes.as_utf8_str()),
            Some(tl::Node::Tag(t))
                if !is_decoration(t, &t.name().as_utf8_str().to_ascii_lowercase()) =>
            {
                push_children(&mut stack, t)
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{detect, Locator};

    fn run(name: &str, text: &str) -> Extraction {
        let loc = Locator::root(name);
        let det = detect(text.as_bytes(), name);
        crate::extract(&ExtractInput {
            bytes: text.as_bytes(),
            locator: &loc,
            file_hash: "abcd",
            detected: &det,
            options: crate::ExtractOptions::defaults(),
        })
        .unwrap()
    }

    #[test]
    fn html_keeps_visible_text_and_sections() {
        let html = "<!DOCTYPE html>\n<html><head><title>T &amp; C</title><style>p{x:1}</style></head>\n<body>\n<script>var hidden=1;</script>\n<h1>Intro</h1>\n<p>Hello &amp; welcome</p>\n<h2>Details</h2>\n<p>Fine print</p>\n</body></html>\n";
        let e = run("page.html", html);
        let all = crate::testing::all_text(&e);
        assert!(all.contains("Hello & welcome"), "{all}");
        assert!(all.contains("Fine print"));
        assert!(!all.contains("hidden"));
        assert!(!all.contains("x:1"));
        let titles: Vec<_> = e.structure.nodes.iter().map(|n| n.title.as_str()).collect();
        assert_eq!(titles, vec!["Intro", "Details"]);
        let last = e.objects.last().unwrap();
        assert_eq!(
            last.context_ref.section_id.as_deref(),
            Some("Intro › Details")
        );
        assert_eq!(last.context_ref.location, "page.html#line=7-8");
        assert_eq!(last.metadata["title"], "T & C");
    }

    #[test]
    fn a_pictures_alt_text_is_part_of_its_page() {
        let long = "penguins ".repeat(60);
        let html = format!(
            "<html><body>\n<p>Field season <img src=\"a.png\" alt=\"Cartoon of the three penguin species: Chinstrap, Gentoo and Ad&eacute;lie\"> results</p>\n<p><img src=\"spacer.gif\" alt=\"\"><img src=\"b.png\" title=\"Map of the colonies\"></p>\n<p><img src=\"c.png\" alt=\"{long}\"></p>\n</body></html>\n"
        );
        let e = run("season.html", &html);
        let all = crate::testing::all_text(&e);
        assert!(
            all.contains(
                "Field season [picture: Cartoon of the three penguin species: Chinstrap, Gentoo and Adélie] results"
            ),
            "{all}"
        );
        assert!(all.contains("[picture: Map of the colonies]"), "{all}");
        // A decorative picture says nothing; a long text is cut at the bound.
        assert!(!all.contains("[picture: ]"), "{all}");
        let cut = all.split("[picture: penguins").nth(1).unwrap_or_default();
        assert!(
            cut.len() <= crate::xmlutil::MAX_PICTURE_TEXT_BYTES + 2,
            "{all}"
        );
    }

    /// What generators put around the text: an XHTML document type with its public
    /// identifier, an XML prolog, comments and conditional comments, Sphinx's permalink
    /// anchors and an icon font's glyph in a heading. None of it is text.
    #[test]
    fn html_without_doctype_comments_or_icon_glyphs() {
        let html = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Strict//EN\"\n  \"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd\">\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>Guide \u{f0c1}</title></head>\n<!-- generated by a tool -->\n<body>\n<!--[if lt IE 9]><p>old browser</p><![endif]-->\n<h1>Install<a class=\"headerlink\" href=\"#install\" title=\"Permalink\">\u{b6}</a></h1>\n<h2><span class=\"fa\">\u{f0c1}</span> Upgrade</h2>\n<p>Run the installer.</p>\n</body></html>\n";
        let e = run("guide.html", html);
        let all = crate::testing::all_text(&e);
        for residue in [
            "DOCTYPE",
            "W3C",
            "xhtml1",
            "<?",
            "<!",
            "-->",
            "generated",
            "\u{b6}",
            "\u{f0c1}",
        ] {
            assert!(!all.contains(residue), "{residue:?} in {all:?}");
        }
        assert!(all.starts_with("Install"), "{all:?}");
        assert!(all.contains("Run the installer."), "{all:?}");
        let titles: Vec<_> = e.structure.nodes.iter().map(|n| n.title.as_str()).collect();
        assert_eq!(titles, vec!["Install", "Upgrade"]);
        assert_eq!(
            e.objects.last().unwrap().context_ref.section_id.as_deref(),
            Some("Install › Upgrade")
        );
        assert_eq!(e.objects[0].metadata["title"], "Guide");
    }

    #[test]
    fn xml_text_with_lines_and_entities() {
        let xml = "<?xml version=\"1.0\"?>\n<doc>\n  <a>Fish &amp; chips</a>\n  <b><![CDATA[raw <text>]]></b>\n</doc>\n";
        let e = run("d.xml", xml);
        assert_eq!(e.objects.len(), 1);
        assert_eq!(e.objects[0].data, "Fish & chips\nraw <text>");
        assert_eq!(e.objects[0].context_ref.location, "d.xml#line=3-4");
    }

    #[test]
    fn xml_attributes_with_words_open_their_elements_text() {
        let xml = "<?xml version=\"1.0\"?>\n<mime-info xmlns=\"http://x.org/ns\">\n  <mime-type type=\"application/x-windows-themepack\">\n    <comment xml:lang=\"de\">Windows-Designpaket</comment>\n    <glob pattern=\"*.themepack\" weight=\"50\"/>\n    <icon d=\"M0 0L\" size=\"1 A\" data=\"";
        let xml = format!(
            "{xml}{}\"/>\n  </mime-type>\n</mime-info>\n",
            "a".repeat(300)
        );
        let e = run("m.xml", &xml);
        assert_eq!(e.objects.len(), 1);
        assert_eq!(
            e.objects[0].data,
            "type=\"application/x-windows-themepack\"\n[de] Windows-Designpaket\n\
             pattern=\"*.themepack\""
        );
        assert_eq!(e.objects[0].context_ref.location, "m.xml#line=3-5");
    }

    #[test]
    fn an_element_with_a_flood_of_attributes_keeps_one_objects_worth() {
        let attributes: String = (0..100_000).map(|i| format!(" a{i}=\"word{i}\"")).collect();
        let xml = format!("<?xml version=\"1.0\"?>\n<r{attributes}>tail text</r>\n");
        let e = run("flood.xml", &xml);
        let kept: usize = e.objects.iter().map(|o| o.data.len()).sum();
        assert!(
            kept < MAX_TEXT_OBJECT_BYTES + 1_000,
            "{kept} of {}",
            xml.len()
        );
        assert!(e.objects.iter().any(|o| o.data.contains("tail text")));
    }

    fn xml(bytes: &[u8]) -> Result<Extraction, ExtractError> {
        let loc = Locator::root("x.xml");
        let det = detect(bytes, "x.xml");
        Xml.extract(&ExtractInput {
            bytes,
            locator: &loc,
            file_hash: "abcd",
            detected: &det,
            options: crate::ExtractOptions::defaults(),
        })
    }

    #[test]
    fn broken_xml_without_text_is_an_error() {
        match xml(b"<?xml version=\"1.0\"?><a><<<") {
            Err(ExtractError::Malformed { format, reason }) => {
                assert_eq!(format, "xml");
                assert!(reason.contains("not closed"), "{reason}");
            }
            other => panic!("expected a malformed-xml error, got {other:?}"),
        }
    }

    #[test]
    fn broken_xml_with_text_keeps_the_text_and_notes_the_error() {
        let e = xml(b"<?xml version=\"1.0\"?>\n<a>kept text</a>\n<<<").unwrap();
        assert_eq!(e.objects.len(), 1);
        assert_eq!(e.objects[0].data, "kept text");
        assert!(e.objects[0].metadata["parse_error"]
            .as_str()
            .is_some_and(|r| !r.is_empty()));
    }
}
