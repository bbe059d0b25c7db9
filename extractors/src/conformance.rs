//! The conformance harness every extractor passes: hostile and degenerate inputs give a clean
//! `Ok` or a `Malformed` error with a reason (never a panic: extractors are called directly,
//! without the panic guard of [`crate::extract`], so a panic fails the test), output is deterministic, and every object's locator parses
//! and points back into its file. The samples are small documents built in code plus every
//! file of `fixtures/formats/` (one per supported format, from
//! `scripts/make-format-fixtures.py`).

use crate::{
    detect, extractor_for, ContentType, DocumentKind, ExtractError, ExtractInput, Extraction,
    FileKind, Locator, TextKind,
};

/// The sample documents in `fixtures/formats/`, with their detected kinds.
pub(crate) fn fixture_files() -> Vec<(String, FileKind, Vec<u8>)> {
    let dir = crate::testing::crate_dir().join("../fixtures/formats");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&path).unwrap();
            let kind = detect(&bytes, &name).kind;
            (name, kind, bytes)
        })
        .collect()
}

/// One sample per extractor kind: (file name, kind, a valid document of that kind).
fn samples() -> Vec<(String, FileKind, Vec<u8>)> {
    let mut all: Vec<(String, FileKind, Vec<u8>)> = built_samples()
        .into_iter()
        .map(|(n, k, b)| (n.to_string(), k, b))
        .collect();
    all.extend(fixture_files());
    all
}

fn built_samples() -> Vec<(&'static str, FileKind, Vec<u8>)> {
    vec![
        (
            "a.txt",
            FileKind::Text(TextKind::Plain),
            b"hello\n\nworld\n".to_vec(),
        ),
        (
            "a.md",
            FileKind::Text(TextKind::Markdown),
            b"# T\nbody\n## U\nmore\n".to_vec(),
        ),
        (
            "a.csv",
            FileKind::Text(TextKind::Csv),
            b"a,b\n1,2\n3,4\n".to_vec(),
        ),
        (
            "a.tsv",
            FileKind::Text(TextKind::Tsv),
            b"a\tb\n1\t2\n".to_vec(),
        ),
        (
            "a.json",
            FileKind::Text(TextKind::Json),
            b"{\"k\": [1, 2, \"three\"]}\n".to_vec(),
        ),
        (
            "a.xml",
            FileKind::Text(TextKind::Xml),
            b"<?xml version=\"1.0\"?><r><a>x &amp; y</a></r>".to_vec(),
        ),
        (
            "a.html",
            FileKind::Text(TextKind::Html),
            b"<html><body><h1>H</h1><p>para</p></body></html>".to_vec(),
        ),
        (
            "a.1",
            FileKind::Text(TextKind::Man),
            b".TH A 1\n.SH NAME\na \\- a page\n.SH DESCRIPTION\n.B bold\ntext\n".to_vec(),
        ),
        (
            "a.pdf",
            FileKind::Document(DocumentKind::Pdf),
            crate::pdf::tests::pdf_fixture(
                &[
                    &[(18, "Title"), (11, "Hello page one")],
                    &[(11, "Page two")],
                ],
                &[("One", 1, 1), ("Two", 1, 2)],
            ),
        ),
        (
            "a.pptx",
            FileKind::Document(DocumentKind::Pptx),
            crate::slides::tests::pptx_fixture(&[("Title", "Body", "Notes")]),
        ),
        (
            "a.odt",
            FileKind::Document(DocumentKind::Odt),
            crate::testing::zip_parts(&[(
                "content.xml",
                "<office:document-content><office:body><office:text><text:h text:outline-level=\"1\">H</text:h><text:p>Body</text:p></office:text></office:body></office:document-content>",
            )]),
        ),
        (
            "a.odp",
            FileKind::Document(DocumentKind::Odp),
            crate::testing::zip_parts(&[(
                "content.xml",
                "<office:document-content><office:body><office:presentation><draw:page><text:p>Slide text</text:p></draw:page></office:presentation></office:body></office:document-content>",
            )]),
        ),
        (
            "a.docx",
            FileKind::Document(DocumentKind::Docx),
            crate::docx::tests::docx_fixture(&format!(
                "{}{}",
                crate::docx::tests::p(Some("Heading1"), "H"),
                crate::docx::tests::p(None, "Body")
            )),
        ),
        (
            "a.xlsx",
            FileKind::Document(DocumentKind::Xlsx),
            crate::sheets::tests::xlsx_fixture(&[("S", &[("A1", "h"), ("A2", "v")])]),
        ),
        (
            "a.ods",
            FileKind::Document(DocumentKind::Ods),
            crate::testing::zip_parts(&[(
                "content.xml",
                "<office:document-content><office:body><office:spreadsheet><table:table table:name=\"S\"><table:table-row><table:table-cell><text:p>h</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell><text:p>v</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet></office:body></office:document-content>",
            )]),
        ),
        ("a.svg", FileKind::Image, b"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"2\"/>".to_vec()),
        ("a.wav", FileKind::Audio, b"RIFF\x24\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x40\x1f\0\0\x40\x1f\0\0\x01\0\x08\0data\0\0\0\0".to_vec()),
        ("a.mp4", FileKind::Video, b"\0\0\0\x10ftypisom\0\0\0\0".to_vec()),
        ("a.bin", FileKind::Other, vec![0, 1, 2, 3, 255, 254]),
    ]
}

/// Run the extractor for `kind` directly, not through [`crate::extract`]: that one turns a
/// panic into an `Err`, which would let a panicking extractor pass. Here a panic unwinds into
/// the test and fails it.
fn run(name: &str, kind: FileKind, bytes: &[u8]) -> Result<Extraction, ExtractError> {
    let locator = Locator::root("dir/archive.zip").member(name);
    let mut detected = detect(bytes, name);
    detected.kind = kind; // force the extractor under test, whatever the bytes look like
    extractor_for(kind).extract(&ExtractInput {
        bytes,
        locator: &locator,
        file_hash: "00112233445566778899aabbccddeeff",
        detected: &detected,
        options: crate::ExtractOptions::defaults(),
    })
}

/// An error for bad input must say what is wrong with it: a `Malformed` error naming the
/// extractor's format with a reason. (`Container` is for archives, `Aborted` for isolated
/// workers; neither may come from an extractor given a document.)
fn check_error(name: &str, kind: FileKind, e: &ExtractError) {
    match e {
        ExtractError::Malformed { format, reason } => {
            assert_eq!(format, extractor_for(kind).name(), "{name}: {e}");
            assert!(!reason.trim().is_empty(), "{name}: empty reason");
        }
        other => panic!("{name}: unexpected error {other:?}"),
    }
}

fn check_locators(name: &str, e: &Extraction) {
    let file = Locator::root("dir/archive.zip").member(name);
    for (i, o) in e.objects.iter().enumerate() {
        assert_eq!(o.sequence as usize, i, "{name}: sequence");
        let loc: Locator =
            o.context_ref.location.parse().unwrap_or_else(|err| {
                panic!("{name}: locator {:?}: {err}", o.context_ref.location)
            });
        assert_eq!(
            loc.to_string(),
            o.context_ref.location,
            "{name}: round trip"
        );
        assert!(loc.is_within(&file), "{name}: {loc} outside {file}");
        assert_eq!(o.context_ref.container_path, file.to_string());
        if o.content_type == ContentType::Text {
            assert!(!o.data.trim().is_empty(), "{name}: empty text object");
        }
    }
}

#[test]
fn valid_samples_extract_with_sound_locators() {
    let samples = samples();
    let kinds: std::collections::HashSet<FileKind> = samples.iter().map(|s| s.1).collect();
    for (name, kind, bytes) in samples {
        let e = run(&name, kind, &bytes).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(!e.objects.is_empty(), "{name}: no objects");
        check_locators(&name, &e);
    }
    // Every document kind with an extractor has a sample here.
    for doc in [
        DocumentKind::Pdf,
        DocumentKind::Docx,
        DocumentKind::Xlsx,
        DocumentKind::Xls,
        DocumentKind::Ods,
        DocumentKind::Pptx,
        DocumentKind::Odp,
        DocumentKind::Odt,
    ] {
        assert!(
            kinds.contains(&FileKind::Document(doc)),
            "no {doc:?} sample"
        );
    }
}

#[test]
fn empty_truncated_garbage_and_non_utf8_inputs_never_panic() {
    let garbage: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for (name, kind, bytes) in samples() {
        let mut inputs: Vec<Vec<u8>> = vec![
            Vec::new(),
            garbage.clone(),
            b"caf\xE9 na\xEFve \xFF\xFE\xFD".to_vec(),
        ];
        for cut in [1, bytes.len() / 2, bytes.len().saturating_sub(1)] {
            inputs.push(bytes.get(..cut).unwrap_or(&[]).to_vec());
        }
        for input in inputs {
            match run(&name, kind, &input) {
                Ok(e) => check_locators(&name, &e),
                Err(e) => check_error(&name, kind, &e),
            }
        }
    }
}

#[test]
fn extraction_is_deterministic() {
    for (name, kind, bytes) in samples() {
        let a = run(&name, kind, &bytes);
        let b = run(&name, kind, &bytes);
        assert_eq!(a, b, "{name}");
    }
}
