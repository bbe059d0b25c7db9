//! Bytes in, typed content objects and structure out.
//!
//! This crate does no I/O to stores or the filesystem: an extractor gets a file's bytes and its
//! [`Locator`], and returns an [`Extraction`] (content objects, each tied to exactly where it
//! came from, plus the file's [`Structure`]). Everything it returns is serde-serializable so
//! that extraction can run in an isolated worker process.
//!
//! Entry points: [`detect()`] to sniff a file, [`extract()`] to run the matching extractor.

mod csv_table;
mod detect;
mod docx;
mod flow;
mod hyphen;
mod locator;
mod man;
mod markup;
mod media;
mod model;
mod objects;
mod ocr;
mod odt;
mod other;
mod package;
mod pdf;
mod pdfium;
mod pivots;
mod positions;
pub mod properties;
mod render;
mod sheets;
mod slides;
mod text;
mod textcodec;
mod tidy;
mod xmlutil;

pub use detect::{
    detect, looks_like_text, package_kind, tar_checksum_ok, ContainerKind, Detected, DocumentKind,
    FileKind, TextKind, SNIFF_LEN,
};
pub use locator::{
    file_name_part, file_part, is_invisible, parse_range, segment_from_bytes, split_fragment,
    split_top, Fragment, Locator, LocatorError, MEMBER_SEPARATOR,
};
pub use model::{
    ContentObject, ContentType, ContextRef, FileContentIndex, IndexStatus, ObjectSummary, PageInfo,
    Scope, Structure, StructureNode,
};
pub use objects::{cut_point, MAX_TEXT_OBJECT_BYTES, SECTION_SEPARATOR};
pub use ocr::{ExtractOptions, OcrError, OcrOptions};
pub use pdf::{
    extract_pdf, pdf_page_texts, prescan_pdf, roman, OutlineEntry, PageTextResult, PdfScan,
};
pub use positions::{LineBox, Positions};
pub use render::{RenderRequest, MAX_DPI, MAX_RENDER_PIXELS};

use serde::{Deserialize, Serialize};

/// Everything an extractor needs to know about one file.
#[derive(Debug, Clone, Copy)]
pub struct ExtractInput<'a> {
    pub bytes: &'a [u8],
    /// The file's locator (no fragment); object locators are built from it.
    pub locator: &'a Locator,
    /// The file's content hash (hex); object ids are derived from it.
    pub file_hash: &'a str,
    pub detected: &'a Detected,
    /// Settings such as OCR; [`ExtractOptions::defaults`] when the caller has none.
    pub options: &'a ExtractOptions,
}

/// What extraction produced for one file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    pub objects: Vec<ContentObject>,
    pub structure: Structure,
}

/// Why a file could not be extracted. One bad file is one error, never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ExtractError {
    #[error("malformed {format}: {reason}")]
    Malformed { format: String, reason: String },
    #[error("{0} is a container; unpack it instead of extracting it")]
    Container(String),
    /// The isolated process extracting the file died, was killed or overran a limit.
    #[error("extraction aborted: {0}")]
    Aborted(String),
}

impl ExtractError {
    pub(crate) fn malformed(format: &str, reason: impl ToString) -> Self {
        ExtractError::Malformed {
            format: format.into(),
            reason: reason.to_string(),
        }
    }
}

/// One extractor per format family. Implementations are stateless and cheap to share.
pub trait Extractor: Send + Sync {
    /// A short name for logs and reports.
    fn name(&self) -> &'static str;
    /// Extract `input` into content objects and structure.
    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError>;
}

/// The extractor for a detected kind.
pub fn extractor_for(kind: FileKind) -> &'static dyn Extractor {
    match kind {
        FileKind::Text(TextKind::Plain) => &text::PlainText,
        FileKind::Text(TextKind::Markdown) => &text::Markdown,
        FileKind::Text(TextKind::Json) => &text::Json,
        FileKind::Text(TextKind::Csv) => &csv_table::Csv { delimiter: b',' },
        FileKind::Text(TextKind::Tsv) => &csv_table::Csv { delimiter: b'\t' },
        FileKind::Text(TextKind::Xml) => &markup::Xml,
        FileKind::Text(TextKind::Html) => &markup::Html,
        FileKind::Text(TextKind::Man) => &man::ManPage,
        FileKind::Document(DocumentKind::Pdf) => &pdf::Pdf,
        FileKind::Document(DocumentKind::Pptx) => &slides::Pptx,
        FileKind::Document(DocumentKind::Odp) => &slides::Odp,
        FileKind::Document(DocumentKind::Odt) => &odt::Odt,
        FileKind::Document(DocumentKind::Docx) => &docx::Docx,
        FileKind::Document(DocumentKind::Xlsx) => &sheets::Xlsx,
        FileKind::Document(DocumentKind::Xls) => &sheets::Xls,
        FileKind::Document(DocumentKind::Ods) => &sheets::Ods,
        FileKind::Container(_) => &other::ContainerRefusal,
        FileKind::Image | FileKind::Audio | FileKind::Video => &media::Media,
        FileKind::Other => &other::Opaque,
    }
}

/// Run the extractor that matches `input.detected`.
///
/// A panic inside a parser (a bug that malformed input reaches) becomes an error for this
/// file. Aborts, stack overflows and hangs cannot be caught in-process; the pipeline runs
/// extraction in isolated worker processes for those.
pub fn extract(input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
    let extractor = extractor_for(input.detected.kind);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Some(request) = &input.options.render {
            return render::render(input, request);
        }
        let mut extraction = extractor.extract(input)?;
        for (key, value) in properties::read(input.detected.kind, input.bytes) {
            properties::put(&mut extraction.structure.properties, &key, &value);
        }
        Ok(extraction)
    }))
    .unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(ExtractError::malformed(
            extractor.name(),
            format!("parser panicked: {message}"),
        ))
    })
}

/// Summaries of `objects` for a [`FileContentIndex`].
pub fn summarize(objects: &[ContentObject]) -> Vec<ObjectSummary> {
    objects
        .iter()
        .map(|o| {
            let number = |key: &str| o.metadata.get(key).and_then(serde_json::Value::as_f64);
            let dimension = |key: &str| number(key).filter(|v| *v >= 0.0).map(|v| v.round() as u64);
            ObjectSummary {
                id: o.id.clone(),
                content_type: o.content_type,
                location: o.context_ref.location.clone(),
                label: o.context_ref.label.clone(),
                section: o.context_ref.section_id.clone(),
                char_count: o.data.chars().count() as u64,
                dimensions: dimension("width").zip(dimension("height")),
                duration_seconds: number("duration_seconds"),
            }
        })
        .collect()
}

#[doc(hidden)]
pub mod made_pdf;

#[cfg(test)]
mod conformance;
#[cfg(test)]
mod fixture_expectations;
#[cfg(test)]
mod testing;
