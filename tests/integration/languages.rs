//! Other languages: with the multilingual model an English question finds a German document
//! and a Dutch letter (`fixtures/languages/`), by meaning, beside the English fixtures.

use crate::util::*;

#[test]
fn an_english_question_finds_german_and_dutch_documents_with_the_multilingual_model() {
    let sb = Sandbox::new();
    let (lines, summary, code) = sb.ingest_with(
        &["--model", "multilingual-e5-small"],
        &[&fixtures().join("languages"), &fixtures().join("docs")],
    );
    assert_eq!(code, 0, "{lines:#?}");
    assert!(
        summary["model"]
            .as_str()
            .is_some_and(|m| m.starts_with("multilingual-e5-small")),
        "{summary}"
    );
    let cases = [
        (
            "Where do used batteries have to go?",
            "abfall-feldstation.md",
        ),
        (
            "When is the car park at the harbour resurfaced, and where can people park meanwhile?",
            "brief-parkeerplaats.txt",
        ),
    ];
    for (question, file) in cases {
        for mode in ["dense", "hybrid"] {
            let hits = sb.search_with(&["--mode", mode, "--limit", "3"], question);
            assert!(
                hits.iter()
                    .any(|h| h["kind"] != "card" && h["locator"].as_str().unwrap().contains(file)),
                "{mode}: {question:?} should find {file}: {hits:#?}"
            );
        }
    }
    // The index keeps its model: the default model is refused on it.
    let refused = sb.run(&[
        "--json",
        "--model",
        "bf16",
        fixtures().join("docs").to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("multilingual-e5-small"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
