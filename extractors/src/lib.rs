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
mod locator;
mod markup;
mod media;
mod model;
mod objects;
mod other;
mod pdf;
mod slides;
mod text;
mod textcodec;

pub use detect::{
    detect, looks_like_text, ContainerKind, Detected, DocumentKind, FileKind, TextKind, SNIFF_LEN,
};
pub use locator::{Fragment, Locator, LocatorError, MEMBER_SEPARATOR};
pub use model::{
    ContentObject, ContentType, ContextRef, FileContentIndex, IndexStatus, ObjectSummary, PageInfo,
    Scope, Structure, StructureNode,
};
pub use objects::SECTION_SEPARATOR;
pub use pdf::{extract_pdf, pdf_page_texts, prescan_pdf, OutlineEntry, PageTextResult, PdfScan};

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
        FileKind::Document(DocumentKind::Pdf) => &pdf::Pdf,
        FileKind::Document(DocumentKind::Pptx) => &slides::Pptx,
        FileKind::Document(DocumentKind::Odp) => &slides::Odp,
        FileKind::Document(DocumentKind::Odt) => &slides::Odt,
        FileKind::Container(_) => &other::ContainerRefusal,
        FileKind::Image | FileKind::Audio | FileKind::Video => &media::Media,
        FileKind::Document(_) => &other::Opaque,
        FileKind::Other => &other::Opaque,
    }
}

/// Run the extractor that matches `input.detected`.
pub fn extract(input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
    extractor_for(input.detected.kind).extract(input)
}

/// Summaries of `objects` for a [`FileContentIndex`].
pub fn summarize(objects: &[ContentObject]) -> Vec<ObjectSummary> {
    objects
        .iter()
        .map(|o| ObjectSummary {
            id: o.id.clone(),
            content_type: o.content_type,
            location: o.context_ref.location.clone(),
            label: o.context_ref.label.clone(),
            char_count: o.data.chars().count() as u64,
        })
        .collect()
}

#[cfg(test)]
mod conformance;
