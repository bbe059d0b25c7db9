//! Shared entry points of the fuzz targets.

use extractors::{detect, DocumentKind, ExtractInput, FileKind, Locator, TextKind};

/// Every extractor kind, selected by a fuzz input's first byte.
pub const KINDS: [FileKind; 16] = [
    FileKind::Document(DocumentKind::Pdf),
    FileKind::Document(DocumentKind::Docx),
    FileKind::Document(DocumentKind::Xlsx),
    FileKind::Document(DocumentKind::Xls),
    FileKind::Document(DocumentKind::Ods),
    FileKind::Document(DocumentKind::Pptx),
    FileKind::Document(DocumentKind::Odp),
    FileKind::Document(DocumentKind::Odt),
    FileKind::Text(TextKind::Plain),
    FileKind::Text(TextKind::Markdown),
    FileKind::Text(TextKind::Csv),
    FileKind::Text(TextKind::Json),
    FileKind::Text(TextKind::Xml),
    FileKind::Text(TextKind::Html),
    FileKind::Text(TextKind::Man),
    FileKind::Image,
    FileKind::Video,
];

/// Run the extractor of `kind` on `bytes`; every outcome but a panic or abort is fine, and
/// every object's locator must parse back.
pub fn extract_as(kind: FileKind, bytes: &[u8]) {
    let locator = Locator::root("fuzz.zip").member("input");
    let mut detected = detect(bytes, "input");
    detected.kind = kind;
    if let Ok(e) = extractors::extract(&ExtractInput {
        bytes,
        locator: &locator,
        file_hash: "00000000000000000000000000000000",
        detected: &detected,
        options: extractors::ExtractOptions::without_ocr(),
    }) {
        for o in &e.objects {
            let parsed: Locator = o.context_ref.location.parse().expect("locator parses");
            assert!(parsed.is_within(&locator));
        }
    }
}
