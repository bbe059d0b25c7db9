//! Files without a content extractor yet: one `other`/media object with the sniffed type and
//! size, so nothing disappears silently.

use serde_json::json;

use crate::model::{ContentType, Structure};
use crate::objects::{ObjectSink, Place};
use crate::{ExtractError, ExtractInput, Extraction, Extractor, FileKind};

pub(crate) struct Opaque;
pub(crate) struct ContainerRefusal;

impl Extractor for Opaque {
    fn name(&self) -> &'static str {
        "opaque"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let content_type = match input.detected.kind {
            FileKind::Image => ContentType::Image,
            FileKind::Audio => ContentType::Audiostream,
            FileKind::Video => ContentType::Videostream,
            _ => ContentType::Other,
        };
        let mut sink = ObjectSink::new(input.locator, input.file_hash);
        sink.push(
            content_type,
            String::new(),
            Place {
                label: Some(input.locator.file_name().to_string()),
                ..Place::default()
            },
            json!({
                "mime": input.detected.mime,
                "size": input.bytes.len(),
            }),
        );
        Ok(Extraction {
            objects: sink.objects,
            structure: Structure::default(),
        })
    }
}

impl Extractor for ContainerRefusal {
    fn name(&self) -> &'static str {
        "container"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        Err(ExtractError::Container(input.detected.mime.clone()))
    }
}
