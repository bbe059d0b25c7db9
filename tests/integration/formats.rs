//! Every document format, end to end: ingest `fixtures/formats/`, then search for each phrase
//! its generator recorded in `tests/expected/formats.json` and check that a top hit is that
//! file at the right page, sheet and row, slide, or section.

use serde_json::Value;

use crate::util::*;

#[test]
fn a_search_for_each_phrase_finds_its_file_and_place() {
    let sb = Sandbox::new();
    let (lines, summary, code) = sb.ingest(&[&fixtures().join("formats")]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(summary["failed"], 0);
    let expected: serde_json::Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(crate::util::repo_dir().join("tests/expected/formats.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(lines.len(), expected.len(), "one ledger line per fixture");
    let mut checked = 0;
    for (file, facts) in &expected {
        for phrase in facts["phrases"].as_array().into_iter().flatten() {
            let text = phrase["text"].as_str().unwrap();
            let hits = sb.search(text, 3);
            let found = hits.iter().any(|h| {
                let loc = h["locator"].as_str().unwrap_or_default();
                let Ok(parsed) = loc.parse::<ingest::Locator>() else {
                    return false;
                };
                let f = &parsed.fragment;
                parsed.file_name() == file
                    && phrase["page"]
                        .as_u64()
                        .is_none_or(|p| f.page == Some(p as u32))
                    && phrase["slide"]
                        .as_u64()
                        .is_none_or(|s| f.slide == Some(s as u32))
                    && phrase["sheet"]
                        .as_str()
                        .is_none_or(|s| f.sheet.as_deref() == Some(s))
                    && phrase["row"]
                        .as_u64()
                        .is_none_or(|r| f.rows.is_some_and(|(a, b)| (a..=b).contains(&r)))
                    && phrase["section"]
                        .as_str()
                        .is_none_or(|s| h["section"].as_str() == Some(s))
            });
            assert!(
                found,
                "{file}: {text:?} expected at {phrase}; hits {hits:#?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} phrases checked");
}
