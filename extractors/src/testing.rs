//! Helpers shared by the unit tests of the extractors.

use std::io::{Cursor, Write};

use crate::{detect, extract, ExtractError, ExtractInput, Extraction, FileKind, Locator};

/// The `extractors` crate's folder. Read at run time (cargo and nextest set it for every
/// test): the value compiled in goes stale when a shared target dir serves two checkouts.
pub(crate) fn crate_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
}

/// Extract `bytes` as a file named `name`, as the detected kind or as `kind` when given.
pub(crate) fn extract_as(
    name: &str,
    bytes: &[u8],
    kind: Option<FileKind>,
) -> Result<Extraction, ExtractError> {
    let locator = Locator::root(name);
    let mut detected = detect(bytes, name);
    if let Some(kind) = kind {
        detected.kind = kind;
    }
    extract(&ExtractInput {
        bytes,
        locator: &locator,
        file_hash: "0123456789abcdef",
        detected: &detected,
        options: crate::ExtractOptions::defaults(),
    })
}

/// Each object as (locator, section path, text): what most tests compare.
pub(crate) fn placed(e: &Extraction) -> Vec<(&str, Option<&str>, &str)> {
    e.objects
        .iter()
        .map(|o| {
            (
                o.context_ref.location.as_str(),
                o.context_ref.section_id.as_deref(),
                o.data.as_str(),
            )
        })
        .collect()
}

/// Every object's text, one after the other (a line between).
pub(crate) fn all_text(e: &Extraction) -> String {
    e.objects
        .iter()
        .map(|o| o.data.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each object as (locator, text).
pub(crate) fn located(e: &Extraction) -> Vec<(&str, &str)> {
    e.objects
        .iter()
        .map(|o| (o.context_ref.location.as_str(), o.data.as_str()))
        .collect()
}

/// A ZIP package of (part name, body) entries, deflated.
pub(crate) fn zip_parts<N: AsRef<str>, B: AsRef<[u8]>>(parts: &[(N, B)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, body) in parts {
        w.start_file(name.as_ref(), zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(body.as_ref()).unwrap();
    }
    w.finish().unwrap().into_inner()
}
