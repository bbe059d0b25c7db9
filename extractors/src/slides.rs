//! Presentations: PPTX and ODP, read straight from their checked ZIP parts with quick-xml.
//!
//! A slide becomes one text object (title first, then body text) plus one for its speaker
//! notes, both at `#slide=N` with the slide title as their section. Parts are read through a
//! size cap, never trusting declared sizes.

use quick_xml::events::Event;
use serde_json::json;

use crate::model::{ContentType, Structure, StructureNode};
use crate::objects::{ObjectSink, Place};
use crate::package::{join, odf_content, open_package, part, relationships, Zip};
use crate::xmlutil::{attr, local, picture_text, resolve};
use crate::{ExtractError, ExtractInput, Extraction, Extractor, Fragment};

pub(crate) struct Pptx;
pub(crate) struct Odp;

/// One paragraph of a slide or notes part, with the placeholder role of its shape.
struct Paragraph {
    role: String,
    text: String,
}

/// PPTX slide or notes XML: paragraphs (`a:p`) of runs (`a:t`), each tagged with its shape's
/// placeholder type (`p:ph type=…`, "body" when absent).
fn drawingml_paragraphs(xml: &[u8]) -> Vec<Paragraph> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let (mut role, mut current, mut in_text) = (String::from("body"), String::new(), false);
    let mut in_picture = false;
    while let Ok(event) = reader.read_event_into(&mut buf) {
        // An empty `p:pic` holds nothing to describe.
        let opened = matches!(event, Event::Start(_));
        match event {
            Event::Start(e) | Event::Empty(e) => match local(e.name().as_ref()) {
                b"pic" => in_picture = opened,
                // A picture's description (its alternative text) says what it shows.
                b"cNvPr" if in_picture => {
                    let said = attr(&e, b"descr")
                        .filter(|d| !d.trim().is_empty())
                        .or_else(|| attr(&e, b"title"));
                    if let Some(text) = said.as_deref().and_then(picture_text) {
                        out.push(Paragraph {
                            role: "body".into(),
                            text,
                        });
                    }
                }
                b"sp" => role = "body".into(),
                b"ph" => role = attr(&e, b"type").unwrap_or_else(|| "body".into()),
                b"t" => in_text = true,
                b"br" => current.push('\n'),
                _ => {}
            },
            Event::End(e) => match local(e.name().as_ref()) {
                b"t" => in_text = false,
                b"pic" => in_picture = false,
                b"p" => {
                    let text = current.trim().to_string();
                    if !text.is_empty() {
                        out.push(Paragraph {
                            role: role.clone(),
                            text,
                        });
                    }
                    current.clear();
                }
                _ => {}
            },
            Event::Text(t) if in_text => {
                if let Ok(s) = t.decode() {
                    current.push_str(&s);
                }
            }
            Event::GeneralRef(r) if in_text => current.push_str(&resolve(&r)),
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// Slide part names in presentation order.
fn pptx_slide_order(zip: &mut Zip<'_>) -> Vec<String> {
    let rels = part(zip, "ppt/_rels/presentation.xml.rels")
        .map(|x| relationships(&x))
        .unwrap_or_default();
    let mut ordered = Vec::new();
    let mut listed = std::collections::HashSet::new();
    if let Some(xml) = part(zip, "ppt/presentation.xml") {
        let mut reader = quick_xml::Reader::from_reader(xml.as_slice());
        let mut buf = Vec::new();
        while let Ok(event) = reader.read_event_into(&mut buf) {
            match event {
                Event::Start(e) | Event::Empty(e) if local(e.name().as_ref()) == b"sldId" => {
                    // The relationship id is the prefixed `r:id`; the plain `id` is a number.
                    let rel_id = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() != b"id" && local(a.key.as_ref()) == b"id")
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned());
                    if let Some((target, _)) = rel_id.and_then(|id| rels.get(&id)) {
                        let slide = join("ppt/presentation.xml", target);
                        // A part listed twice is read once: repeats would re-inflate it.
                        if listed.insert(slide.clone()) {
                            ordered.push(slide);
                        }
                    }
                }
                Event::Eof => break,
                _ => {}
            }
            buf.clear();
        }
    }
    if ordered.is_empty() {
        // No readable presentation part: fall back to slide numbers.
        let mut numbered: Vec<(u32, String)> = zip
            .file_names()
            .filter_map(|n| {
                let n = n.ok()?;
                let num = n
                    .strip_prefix("ppt/slides/slide")?
                    .strip_suffix(".xml")?
                    .parse()
                    .ok()?;
                Some((num, n.to_string()))
            })
            .collect();
        numbered.sort();
        ordered = numbered.into_iter().map(|(_, n)| n).collect();
    }
    ordered
}

struct SlideText {
    title: Option<String>,
    body: Vec<String>,
    notes: Vec<String>,
}

fn push_slides(input: &ExtractInput<'_>, slides: Vec<SlideText>) -> Extraction {
    let mut sink = ObjectSink::new(input.locator, input.file_hash);
    let mut nodes = Vec::new();
    for (i, s) in slides.into_iter().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let fragment = Fragment {
            slide: Some(n),
            ..Fragment::default()
        };
        let before = sink.objects.len();
        let title = s.title.clone().unwrap_or_else(|| format!("Slide {n}"));
        let mut text = s.title.iter().cloned().collect::<Vec<_>>();
        text.extend(s.body);
        if !text.is_empty() {
            sink.push(
                ContentType::Text,
                text.join("\n"),
                Place {
                    fragment: fragment.clone(),
                    label: Some(format!("slide {n}")),
                    section: Some(title.clone()),
                },
                json!({ "part": "slide" }),
            );
        }
        if !s.notes.is_empty() {
            sink.push(
                ContentType::Text,
                s.notes.join("\n"),
                Place {
                    fragment: fragment.clone(),
                    label: Some(format!("slide {n} notes")),
                    section: Some(title.clone()),
                },
                json!({ "part": "notes" }),
            );
        }
        nodes.push(StructureNode {
            kind: "slide".into(),
            title,
            level: 1,
            locator: input.locator.with_fragment(fragment).to_string(),
            objects: u32::try_from(sink.objects.len() - before).unwrap_or(0),
            pages: None,
        });
    }
    Extraction {
        objects: sink.objects,
        structure: Structure {
            nodes,
            ..Structure::default()
        },
    }
}

impl Extractor for Pptx {
    fn name(&self) -> &'static str {
        "pptx"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let mut zip = open_package("pptx", input.bytes)?;
        let order = pptx_slide_order(&mut zip);
        if order.is_empty() && zip.by_name("ppt/presentation.xml").is_err() {
            return Err(ExtractError::malformed("pptx", "no presentation part"));
        }
        let mut slides = Vec::new();
        // Each notes part is read once, however many slides point at it: repeats would
        // re-inflate it past what the package check measured.
        let mut notes_read = std::collections::HashSet::new();
        for name in order {
            let Some(xml) = part(&mut zip, &name) else {
                continue;
            };
            let paragraphs = drawingml_paragraphs(&xml);
            let is_title = |p: &Paragraph| p.role == "title" || p.role == "ctrTitle";
            let title = paragraphs
                .iter()
                .filter(|p| is_title(p))
                .map(|p| p.text.clone())
                .collect::<Vec<_>>();
            let body = paragraphs
                .iter()
                .filter(|p| {
                    !is_title(p) && !matches!(p.role.as_str(), "sldNum" | "dt" | "ftr" | "hdr")
                })
                .map(|p| p.text.clone())
                .collect();
            let rels_name = join(
                &name,
                &format!("_rels/{}.rels", name.rsplit('/').next().unwrap_or("")),
            );
            let notes_part = part(&mut zip, &rels_name).and_then(|r| {
                relationships(&r)
                    .into_values()
                    .find(|(_, kind)| kind.ends_with("/notesSlide"))
                    .map(|(target, _)| join(&name, &target))
            });
            let notes = notes_part
                .filter(|n| notes_read.insert(n.clone()))
                .and_then(|n| part(&mut zip, &n))
                .map(|xml| {
                    drawingml_paragraphs(&xml)
                        .into_iter()
                        .filter(|p| p.role == "body")
                        .map(|p| p.text)
                        .collect()
                })
                .unwrap_or_default();
            slides.push(SlideText {
                title: (!title.is_empty()).then(|| title.join(" ")),
                body,
                notes,
            });
        }
        Ok(push_slides(input, slides))
    }
}

impl Extractor for Odp {
    fn name(&self) -> &'static str {
        "odp"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let xml = odf_content("odp", input.bytes)?;
        let mut reader = quick_xml::Reader::from_reader(xml.as_slice());
        let mut buf = Vec::new();
        let mut slides: Vec<SlideText> = Vec::new();
        let (mut in_notes, mut frame_class, mut para, mut depth_p) =
            (false, String::new(), String::new(), 0u32);
        loop {
            let event = reader
                .read_event_into(&mut buf)
                .map_err(|e| ExtractError::malformed("odp", e))?;
            match event {
                Event::Start(e) => match local(e.name().as_ref()) {
                    b"page" if e.name().as_ref() == b"draw:page" => slides.push(SlideText {
                        title: None,
                        body: Vec::new(),
                        notes: Vec::new(),
                    }),
                    b"notes" => in_notes = true,
                    b"frame" => frame_class = attr(&e, b"presentation:class").unwrap_or_default(),
                    b"p" | b"h" => depth_p += 1,
                    _ => {}
                },
                Event::Empty(e)
                    if matches!(local(e.name().as_ref()), b"s" | b"tab" | b"line-break")
                        && depth_p > 0 =>
                {
                    para.push(' ')
                }
                Event::End(e) => match local(e.name().as_ref()) {
                    b"notes" => in_notes = false,
                    b"frame" => frame_class.clear(),
                    b"p" | b"h" => {
                        depth_p = depth_p.saturating_sub(1);
                        let text = para.split_whitespace().collect::<Vec<_>>().join(" ");
                        para.clear();
                        if let (Some(slide), false) = (slides.last_mut(), text.is_empty()) {
                            if in_notes {
                                slide.notes.push(text);
                            } else if frame_class == "title" && slide.title.is_none() {
                                slide.title = Some(text);
                            } else {
                                slide.body.push(text);
                            }
                        }
                    }
                    _ => {}
                },
                Event::Text(t) if depth_p > 0 => {
                    if let Ok(s) = t.decode() {
                        para.push_str(&s);
                    }
                }
                Event::GeneralRef(r) if depth_p > 0 => para.push_str(&resolve(&r)),
                Event::Eof => break,
                _ => {}
            }
            buf.clear();
        }
        Ok(push_slides(input, slides))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::{extract_as, zip_parts};

    fn sp(ph: Option<&str>, text: &str) -> String {
        let ph = ph
            .map(|t| format!("<p:nvSpPr><p:nvPr><p:ph type=\"{t}\"/></p:nvPr></p:nvSpPr>"))
            .unwrap_or_default();
        format!("<p:sp>{ph}<p:txBody><a:p><a:r><a:t>{text}</a:t></a:r></a:p></p:txBody></p:sp>")
    }

    /// A PPTX with (title, body, notes) slides.
    pub(crate) fn pptx_fixture(slides: &[(&str, &str, &str)]) -> Vec<u8> {
        let order: Vec<usize> = (1..=slides.len()).collect();
        pptx_in_order(slides, &order)
    }

    /// A PPTX whose slide parts are numbered as given, presented in `order` (part numbers).
    fn pptx_in_order(slides: &[(&str, &str, &str)], order: &[usize]) -> Vec<u8> {
        let ns = "xmlns:p=\"p\" xmlns:a=\"a\" xmlns:r=\"r\"";
        let mut parts: Vec<(String, String)> = vec![(
            "[Content_Types].xml".into(),
            "<Types><Override PartName=\"/ppt/presentation.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml\"/></Types>".into(),
        )];
        let mut ids = String::new();
        let mut rels = String::new();
        for (i, (title, body, notes)) in slides.iter().enumerate() {
            let n = i + 1;
            rels.push_str(&format!(
                "<Relationship Id=\"rId{n}\" Type=\"slide\" Target=\"slides/slide{n}.xml\"/>"
            ));
            parts.push((
                format!("ppt/slides/slide{n}.xml"),
                format!(
                    "<p:sld {ns}><p:cSld><p:spTree>{}{}</p:spTree></p:cSld></p:sld>",
                    sp(Some("title"), title),
                    sp(None, body)
                ),
            ));
            parts.push((
                format!("ppt/slides/_rels/slide{n}.xml.rels"),
                format!("<Relationships><Relationship Id=\"rId1\" Type=\"http://schemas/notesSlide\" Target=\"../notesSlides/notesSlide{n}.xml\"/></Relationships>"),
            ));
            parts.push((
                format!("ppt/notesSlides/notesSlide{n}.xml"),
                format!(
                    "<p:notes {ns}><p:cSld><p:spTree>{}{}</p:spTree></p:cSld></p:notes>",
                    sp(Some("sldNum"), "7"),
                    sp(Some("body"), notes)
                ),
            ));
        }
        for n in order {
            ids.push_str(&format!("<p:sldId id=\"{}\" r:id=\"rId{n}\"/>", 255 + n));
        }
        parts.push((
            "ppt/presentation.xml".into(),
            format!("<p:presentation {ns}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>"),
        ));
        parts.push((
            "ppt/_rels/presentation.xml.rels".into(),
            format!("<Relationships>{rels}</Relationships>"),
        ));
        zip_parts(&parts)
    }

    fn run(name: &str, bytes: &[u8], kind: crate::DocumentKind) -> Extraction {
        extract_as(name, bytes, Some(crate::FileKind::Document(kind))).unwrap()
    }

    #[test]
    fn pptx_slides_titles_bodies_and_notes() {
        let deck = pptx_fixture(&[
            ("Q3 results", "Revenue grew 12 %", "Mention the new store"),
            ("Outlook", "Hiring &amp; training", ""),
        ]);
        let e = run("deck.pptx", &deck, crate::DocumentKind::Pptx);
        assert_eq!(
            crate::testing::located(&e),
            vec![
                ("deck.pptx#slide=1", "Q3 results\nRevenue grew 12 %"),
                ("deck.pptx#slide=1", "Mention the new store"),
                ("deck.pptx#slide=2", "Outlook\nHiring & training"),
            ]
        );
        assert_eq!(e.structure.nodes[1].title, "Outlook");
    }

    #[test]
    fn a_slide_pictures_description_is_part_of_the_slide() {
        let slide = "<p:sld xmlns:p=\"p\" xmlns:a=\"a\"><p:cSld><p:spTree>\
            <p:sp><p:txBody><a:p><a:r><a:t>Colonies visited</a:t></a:r></a:p></p:txBody></p:sp>\
            <p:pic><p:nvPicPr><p:cNvPr id=\"4\" name=\"Picture 3\" descr=\"Cartoon of the three penguin species:&#10;Chinstrap, Gentoo and Ad&#233;lie\"/></p:nvPicPr></p:pic>\
            <p:pic><p:nvPicPr><p:cNvPr id=\"5\" name=\"Picture 4\" descr=\"\"/></p:nvPicPr></p:pic>\
            <p:sp><p:nvSpPr><p:cNvPr id=\"6\" name=\"Box\" descr=\"a text box, not a picture\"/></p:nvSpPr></p:sp>\
            </p:spTree></p:cSld></p:sld>";
        let texts: Vec<String> = drawingml_paragraphs(slide.as_bytes())
            .into_iter()
            .map(|p| p.text)
            .collect();
        assert_eq!(
            texts,
            vec![
                "Colonies visited".to_string(),
                "[picture: Cartoon of the three penguin species: Chinstrap, Gentoo and Adélie]"
                    .to_string()
            ]
        );
    }

    #[test]
    fn pptx_slides_follow_the_presentation_order_not_part_numbers() {
        let deck = pptx_in_order(&[("Second", "b", ""), ("First", "a", "")], &[2, 1]);
        let e = run("deck.pptx", &deck, crate::DocumentKind::Pptx);
        assert_eq!(
            crate::testing::located(&e),
            vec![
                ("deck.pptx#slide=1", "First\na"),
                ("deck.pptx#slide=2", "Second\nb"),
            ]
        );
    }

    #[test]
    fn odp_pages_become_slides() {
        let content = "<office:document-content xmlns:office=\"o\" xmlns:draw=\"d\" xmlns:text=\"t\" xmlns:presentation=\"p\"><office:body><office:presentation>\
            <draw:page draw:name=\"p1\"><draw:frame presentation:class=\"title\"><draw:text-box><text:p>Welcome</text:p></draw:text-box></draw:frame>\
            <draw:frame presentation:class=\"outline\"><draw:text-box><text:p>First point</text:p></draw:text-box></draw:frame>\
            <presentation:notes><draw:frame><draw:text-box><text:p>Say hello</text:p></draw:text-box></draw:frame></presentation:notes></draw:page>\
            </office:presentation></office:body></office:document-content>";
        let odp = zip_parts(&[
            (
                "mimetype",
                "application/vnd.oasis.opendocument.presentation",
            ),
            ("content.xml", content),
        ]);
        let e = run("a.odp", &odp, crate::DocumentKind::Odp);
        assert_eq!(
            crate::testing::located(&e),
            vec![
                ("a.odp#slide=1", "Welcome\nFirst point"),
                ("a.odp#slide=1", "Say hello")
            ]
        );
    }
}
