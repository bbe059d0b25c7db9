//! The data that flows out of extraction: typed content objects, their context references, and
//! the per-file content index. Everything here is serde-serializable because extraction is meant
//! to run in isolated worker processes that hand results back over a pipe.

use serde::{Deserialize, Serialize};

use crate::locator::Locator;

/// What kind of content an object carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContentType {
    /// Extracted text (a paragraph run, a line range, a table as Markdown, ...).
    Text,
    /// An embedded or standalone picture; `data` is empty, `metadata` holds format and size.
    Image,
    /// A video stream; `metadata` holds duration and dimensions where known.
    Videostream,
    /// An audio stream; `metadata` holds duration, sample rate and channels where known.
    Audiostream,
    /// Anything the pipeline cannot read; `metadata` holds the size and sniffed type.
    Other,
}

impl ContentType {
    /// The lowercase name used in JSON and payloads.
    pub fn as_str(self) -> &'static str {
        match self {
            ContentType::Text => "text",
            ContentType::Image => "image",
            ContentType::Videostream => "videostream",
            ContentType::Audiostream => "audiostream",
            ContentType::Other => "other",
        }
    }
}

/// Where an object came from, precisely enough to read it again or to cite it.
///
/// `container_path` is the chain of containers down to the file (without the fragment); the
/// other fields say where inside the file. Page and slide numbers are 1-based, as a viewer
/// shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextRef {
    /// The file's locator without fragment: `outer.zip!/docs/inner.tar.gz!/report.pdf`.
    pub container_path: String,
    /// The object's full locator, fragment included: `…report.pdf#page=12`.
    pub location: String,
    /// A short human label: a heading, a sheet name, "lines 10-42".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// 1-based physical page number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_index: Option<u32>,
    /// The section path, e.g. `2 Installation › 2.3 Upgrading`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet_name: Option<String>,
    /// 1-based slide number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slide_index: Option<u32>,
}

impl ContextRef {
    /// A context reference for `locator`, with `container_path` and `location` filled in.
    pub fn at(locator: &Locator) -> Self {
        ContextRef {
            container_path: locator.without_fragment().to_string(),
            location: locator.to_string(),
            label: None,
            page_index: locator.fragment.page,
            section_id: None,
            sheet_name: locator.fragment.sheet.clone(),
            slide_index: locator.fragment.slide,
        }
    }

    /// The boundary key chunking must not cross: two objects with different keys never share
    /// a chunk.
    pub fn boundary_key(&self) -> (Option<u32>, Option<&str>, Option<&str>, Option<u32>) {
        (
            self.page_index,
            self.section_id.as_deref(),
            self.sheet_name.as_deref(),
            self.slide_index,
        )
    }
}

/// One unit of extracted content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentObject {
    /// Stable id: derived from the file's content hash and `sequence`.
    pub id: String,
    /// The content hash of the file the object came from.
    pub file_id: String,
    pub content_type: ContentType,
    /// The text for `text` objects; empty for media objects.
    pub data: String,
    pub context_ref: ContextRef,
    /// Format-specific facts (dimensions, duration, encoding, ...).
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// 0-based position of the object in its file.
    pub sequence: u32,
    /// Where the object is on its page or picture: line boxes of PDF text (PDFium) and OCR
    /// text (tesseract), an image's box on its page. Kept apart from `metadata`: read only
    /// when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions: Option<crate::positions::Positions>,
}

/// Where a file is in the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum IndexStatus {
    #[default]
    Pending,
    Extracted,
    Embedding,
    Indexed,
    Failed,
}

/// A node of a file's structure: a section, a sheet, a slide, a page range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructureNode {
    /// `section`, `sheet`, `slide`, `page`, `table`.
    pub kind: String,
    pub title: String,
    /// Nesting depth, 1 for top-level nodes.
    pub level: u32,
    /// Where the node starts: a locator into the file.
    pub locator: String,
    /// How many content objects belong to the node.
    pub objects: u32,
    /// First and last 1-based page the node covers (paged formats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<(u32, u32)>,
}

/// What a cheap pre-scan learned about one page, without extracting its text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageInfo {
    /// 1-based physical page number.
    pub page: u32,
    /// The page label a viewer shows (`iv`, `A-3`), when the file defines labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Bytes of text shown by the page's content stream (an estimate of its text length).
    pub text_bytes: u32,
    /// Image XObjects and inline images drawn on the page.
    pub images: u32,
    /// Lines set in a clearly larger font than the body text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headings: Vec<String>,
    /// Many ruled lines or rectangles next to text: probably a table.
    pub has_table: bool,
    /// The page has no text layer and its text was recognised by OCR.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ocr: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Structure found by a cheap pre-scan: the table of contents of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Structure {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<StructureNode>,
    /// Lines for line-based text, rows for CSV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_count: Option<u64>,
    /// Pages, for paged formats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_count: Option<u32>,
    /// The per-page map of paged formats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<PageInfo>,
    /// Descriptive properties the file carries (title, author, subject, keywords, …): see
    /// [`crate::properties`].
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub properties: crate::properties::Properties,
}

/// One line of a file's object summary: enough to browse without reading the objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectSummary {
    pub id: String,
    pub content_type: ContentType,
    pub location: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The section path, as in the object's context reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    pub char_count: u64,
    /// Pixel width and height (images, video, pictures in documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<(u64, u64)>,
    /// Seconds (audio and video).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
}

/// The per-file content index: what a file is and what is inside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileContentIndex {
    /// The file's content hash.
    pub id: String,
    pub file_name: String,
    pub mime_type: String,
    /// The file's locator (container chain, no fragment).
    pub container_path: String,
    pub total_objects: u32,
    /// Size of the file in bytes.
    pub total_size: u64,
    pub structure: Structure,
    pub object_summary: Vec<ObjectSummary>,
    /// Seconds since the Unix epoch.
    pub extracted_at: u64,
    pub status: IndexStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Who may see indexed content. Search is always filtered by a scope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    pub user_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_instance_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mandate_id: Option<String>,
    /// Shared content is visible to every user of the same mandate.
    #[serde(default)]
    pub is_shared: bool,
    /// One agent run (a workflow) of this user and feature instance: content stored with it
    /// (tool results, entities, summaries) is visible to that workflow only. `None`: the
    /// scope's documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
}

impl Scope {
    /// A private scope for one user.
    pub fn user(user_id: impl Into<String>) -> Self {
        Scope {
            user_id: user_id.into(),
            ..Scope::default()
        }
    }

    /// A stable key naming the scope, used to keep identical content in different scopes apart.
    /// A workflow's scope adds `\u{1f}workflow:<id>`, so the keys of scopes without one are
    /// what they always were.
    pub fn key(&self) -> String {
        let mut key = format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.user_id,
            self.feature_instance_id.as_deref().unwrap_or(""),
            self.mandate_id.as_deref().unwrap_or(""),
            self.is_shared
        );
        if let Some(w) = &self.workflow_id {
            key.push_str("\u{1f}workflow:");
            key.push_str(w);
        }
        key
    }

    /// This scope's workflow `workflow`: the same user, feature instance and mandate, private.
    pub fn in_workflow(&self, workflow: impl Into<String>) -> Scope {
        Scope {
            is_shared: false,
            workflow_id: Some(workflow.into()),
            ..self.clone()
        }
    }
}
