//! Every file in `fixtures/formats/` extracts to what `tests/expected/formats.json` (written by
//! the same generator) says it holds: each phrase in an object at the right page, section,
//! sheet and row, or slide; the PDF outline, page labels and images; picture sizes; media
//! durations and stream facts.

use serde_json::Value;

use crate::conformance::fixture_files;
use crate::{ContentType, Extraction, FileKind, Locator};

fn expected() -> serde_json::Map<String, Value> {
    let path = crate::testing::crate_dir().join("../tests/expected/formats.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn extracted(name: &str, bytes: &[u8]) -> Extraction {
    crate::testing::extract_as(name, bytes, None).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn check_phrase(name: &str, e: &Extraction, phrase: &Value) {
    let text = phrase["text"].as_str().unwrap();
    let holders: Vec<_> = e
        .objects
        .iter()
        .filter(|o| squash(&o.data).contains(&squash(text).replace('|', "\\|")))
        .collect();
    assert!(!holders.is_empty(), "{name}: no object holds {text:?}");
    let ok = holders.iter().any(|o| {
        let loc: Locator = o.context_ref.location.parse().unwrap();
        let f = &loc.fragment;
        let page = phrase["page"]
            .as_u64()
            .is_none_or(|p| f.page == Some(p as u32));
        let slide = phrase["slide"]
            .as_u64()
            .is_none_or(|s| f.slide == Some(s as u32));
        let notes = phrase["notes"]
            .as_bool()
            .is_none_or(|n| (o.metadata.get("part").and_then(Value::as_str) == Some("notes")) == n);
        let sheet = phrase["sheet"]
            .as_str()
            .is_none_or(|s| f.sheet.as_deref() == Some(s));
        let row = phrase["row"]
            .as_u64()
            .is_none_or(|r| f.rows.is_some_and(|(a, b)| (a..=b).contains(&r)));
        let section = phrase["section"]
            .as_str()
            .is_none_or(|s| o.context_ref.section_id.as_deref() == Some(s));
        page && slide && notes && sheet && row && section
    });
    let places: Vec<_> = holders
        .iter()
        .map(|o| (&o.context_ref.location, &o.context_ref.section_id))
        .collect();
    assert!(
        ok,
        "{name}: {text:?} expected at {phrase}, found at {places:?}"
    );
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

#[test]
fn every_format_fixture_extracts_what_its_generator_put_in() {
    let expected = expected();
    let files = fixture_files();
    assert_eq!(
        files.len(),
        expected.len(),
        "fixtures/formats and tests/expected/formats.json list different files"
    );
    for (name, kind, bytes) in files {
        let facts = &expected[&name];
        let e = extracted(&name, &bytes);
        assert!(!e.objects.is_empty(), "{name}: no objects");
        for phrase in facts["phrases"].as_array().into_iter().flatten() {
            check_phrase(&name, &e, phrase);
        }
        let titles = |key: &str| -> Vec<String> {
            facts[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v.as_str().or(v["title"].as_str()).unwrap().to_string())
                .collect()
        };
        let nodes = |kind: &str| -> Vec<String> {
            e.structure
                .nodes
                .iter()
                .filter(|n| n.kind == kind)
                .map(|n| n.title.clone())
                .collect()
        };
        if facts.get("sheets").is_some() {
            assert_eq!(nodes("sheet"), titles("sheets"), "{name}: sheets");
        }
        if facts.get("slides").is_some() {
            assert_eq!(nodes("slide"), titles("slides"), "{name}: slides");
        }
        if facts.get("sections").is_some() {
            assert_eq!(nodes("section"), titles("sections"), "{name}: sections");
        }
        if let Some(outline) = facts["outline"].as_array() {
            let nodes = &e.structure.nodes;
            for entry in outline {
                let page = entry["page"].as_u64().unwrap() as u32;
                assert!(
                    nodes
                        .iter()
                        .any(|n| n.title == entry["title"].as_str().unwrap()
                            && u64::from(n.level) == entry["level"].as_u64().unwrap()
                            && n.pages.is_some_and(|(a, _)| a == page)),
                    "{name}: outline entry {entry} not in {nodes:?}"
                );
            }
        }
        if let Some(labels) = facts["page_labels"].as_array() {
            let got: Vec<Option<&str>> = e
                .structure
                .pages
                .iter()
                .map(|p| p.label.as_deref())
                .collect();
            let want: Vec<Option<&str>> = labels.iter().map(Value::as_str).collect();
            assert_eq!(got, want, "{name}: page labels");
        }
        if let Some(pages) = facts["pages"].as_u64() {
            assert_eq!(e.structure.page_count, Some(pages as u32), "{name}: pages");
        }
        // Pictures: standalone images, pictures in PDFs and DOCX.
        let images: Vec<_> = e
            .objects
            .iter()
            .filter(|o| o.content_type == ContentType::Image)
            .collect();
        for want in facts["images"].as_array().into_iter().flatten() {
            assert!(
                images.iter().any(|o| {
                    o.metadata["width"].as_f64() == want["width"].as_f64()
                        && o.metadata["height"].as_f64() == want["height"].as_f64()
                        && want["page"]
                            .as_u64()
                            .is_none_or(|p| o.context_ref.page_index == Some(p as u32))
                        && want["section"]
                            .as_str()
                            .is_none_or(|s| o.context_ref.section_id.as_deref() == Some(s))
                }),
                "{name}: picture {want} not among {:?}",
                images.iter().map(|o| &o.metadata).collect::<Vec<_>>()
            );
        }
        let is_ocr = |o: &&crate::ContentObject| o.metadata.get("ocr") == Some(&Value::Bool(true));
        if facts["has_text"] == Value::Bool(false) {
            assert!(
                e.objects
                    .iter()
                    .all(|o| o.content_type != ContentType::Text || is_ocr(&o)),
                "{name}: an image-only PDF has no text objects but OCR's"
            );
            assert!(e
                .objects
                .iter()
                .filter(|o| o.content_type == ContentType::Image)
                .all(|o| o.metadata["scanned_page"] == true));
        }
        // Text only OCR can find: in an OCR text object (`ocr: true`) on the right page.
        let ocr_phrases: Vec<&Value> = facts["ocr_phrases"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let ocr_objects: Vec<_> = e.objects.iter().filter(is_ocr).collect();
        for phrase in &ocr_phrases {
            let text = squash(phrase["text"].as_str().unwrap());
            assert!(
                ocr_objects.iter().any(|o| squash(&o.data).contains(&text)
                    && o.content_type == ContentType::Text
                    && phrase["page"]
                        .as_u64()
                        .is_none_or(|p| o.context_ref.page_index == Some(p as u32))),
                "{name}: no OCR text object holds {text:?}: {:?}",
                ocr_objects
                    .iter()
                    .map(|o| (&o.context_ref.location, &o.data))
                    .collect::<Vec<_>>()
            );
        }
        if ocr_phrases.is_empty() {
            assert!(
                ocr_objects.is_empty(),
                "{name}: OCR text from a picture without words: {ocr_objects:?}"
            );
        }
        // Standalone media: one object with the stream facts.
        if matches!(kind, FileKind::Image | FileKind::Audio | FileKind::Video) {
            let o = &e.objects[0];
            for key in ["width", "height", "sample_rate", "channels"] {
                if let Some(want) = facts[key].as_f64() {
                    assert_eq!(o.metadata[key].as_f64(), Some(want), "{name}: {key}");
                }
            }
            if let Some(want) = facts["duration_seconds"].as_f64() {
                let got = o.metadata["duration_seconds"].as_f64();
                // MP3 and MPEG-PS durations are estimates from headers and clocks.
                let tolerance = if o.metadata.contains_key("duration_estimated") {
                    0.2
                } else {
                    0.02
                };
                assert!(
                    got.is_some_and(|g| close(g, want, tolerance)),
                    "{name}: duration {got:?}, expected {want}"
                );
            }
        }
        let summary = crate::summarize(&e.objects);
        assert_eq!(summary.len(), e.objects.len());
        if let (Some(w), Some(h)) = (facts["width"].as_u64(), facts["height"].as_u64()) {
            assert_eq!(
                summary[0].dimensions,
                Some((w, h)),
                "{name}: summary dimensions"
            );
        }
        if kind == FileKind::Audio {
            assert!(
                summary[0].duration_seconds.is_some(),
                "{name}: summary duration"
            );
        }
    }
}
