//! Shared entry points of the fuzz targets.

use extractors::{detect, DocumentKind, ExtractInput, FileKind, Locator, TextKind};
use ingest_unpack::{Leaf, Unpacker};
use ingest::Limits;

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

/// The container formats the unpacker opens, each its own fuzz target (`unpack_<ext>`), named
/// as a top-level file so detection takes the bytes for that format; `fuzz/seeds/unpack_<ext>/`
/// holds the inputs that once crashed or hung it (the integration test `hostile::fuzz_seeds`
/// runs them on every test run).
pub const CONTAINERS: [&str; 7] = ["zip", "tar", "tgz", "gz", "eml", "mbox", "msg"];

/// Unpack `data` as a top-level `input.<ext>` under small limits: every leaf's locator lies
/// within the input and parses back, and no more leaves come than the member limit allows.
pub fn unpack_as(ext: &str, data: &[u8]) -> u64 {
    let limits = Limits {
        max_total_bytes: 32 * 1024 * 1024,
        max_file_bytes: 8 * 1024 * 1024,
        max_files: 2_000,
        ..Limits::default()
    };
    let top = Locator::root(format!("input.{ext}"));
    let mut leaves = 0u64;
    Unpacker::new(&limits).expand_bytes(data.to_vec(), &top, &mut |leaf| {
        leaves += 1;
        let locator = match &leaf {
            Leaf::File { locator, .. }
            | Leaf::Skipped { locator, .. }
            | Leaf::Failed { locator, .. }
            | Leaf::Shadowed { locator, .. }
            | Leaf::Container { locator, .. } => locator,
        };
        assert!(locator.is_within(&top));
        let printed = locator.to_string();
        assert_eq!(printed.parse::<Locator>().ok().as_ref(), Some(locator));
    });
    // Every member is charged to the member limit: one line each, plus the top's.
    assert!(leaves <= limits.max_files + 1, "{leaves} leaves");
    leaves
}
