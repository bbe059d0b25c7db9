//! Building content objects with stable ids and complete context references.

use serde_json::{Map, Value};

use crate::locator::{Fragment, Locator};
use crate::model::{ContentObject, ContentType, ContextRef};

/// Joins the titles of nested sections in a section path: `2 Installation › 2.3 Upgrading`.
pub const SECTION_SEPARATOR: &str = " › ";

/// Where a new object sits inside its file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Place {
    pub fragment: Fragment,
    pub label: Option<String>,
    pub section: Option<String>,
}

/// Accumulates the objects of one file, numbering them and deriving their ids.
pub(crate) struct ObjectSink<'a> {
    locator: &'a Locator,
    file_hash: &'a str,
    pub objects: Vec<ContentObject>,
}

impl<'a> ObjectSink<'a> {
    pub fn new(locator: &'a Locator, file_hash: &'a str) -> Self {
        ObjectSink {
            locator,
            file_hash,
            objects: Vec::new(),
        }
    }

    /// Add an object; `metadata` must be a JSON object (anything else is dropped).
    pub fn push(&mut self, content_type: ContentType, data: String, place: Place, metadata: Value) {
        let sequence = u32::try_from(self.objects.len()).unwrap_or(u32::MAX);
        let located = self.locator.with_fragment(place.fragment);
        let mut context_ref = ContextRef::at(&located);
        context_ref.label = place.label;
        context_ref.section_id = place.section;
        let metadata = match metadata {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        self.objects.push(ContentObject {
            id: self.id(sequence),
            file_id: self.file_hash.to_string(),
            content_type,
            data,
            context_ref,
            metadata,
            sequence,
        });
    }
}

impl ObjectSink<'_> {
    fn id(&self, sequence: u32) -> String {
        let prefix = self.file_hash.get(..16).unwrap_or(self.file_hash);
        format!("{prefix}:{sequence}")
    }

    /// Add objects another extractor made for the same file, renumbered after ours.
    pub fn append(&mut self, objects: Vec<ContentObject>) {
        for mut o in objects {
            let sequence = u32::try_from(self.objects.len()).unwrap_or(u32::MAX);
            o.sequence = sequence;
            o.id = self.id(sequence);
            self.objects.push(o);
        }
    }
}

/// A label for a line range: "lines 3-9".
pub(crate) fn lines_label(first: u64, last: u64) -> String {
    if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    }
}
