//! `render_page`: one page of a PDF (or a region of it), or a picture, as a PNG within a
//! byte budget, for a model that can look at a chart, a scanned table or a diagram.
//!
//! The file is found as every tool finds it (another scope's file is answered as a missing
//! one), its indexed bytes are read again (`super::original`: never a name as a path, never
//! other bytes than the indexed content), and the rendering runs in the isolated extraction
//! worker under its memory and time limits (`extractors::RenderRequest`). The image is
//! counted by its own budget (`max_bytes`): the answer's text stays within `max_chars`.

use extractors::{Detected, DocumentKind, ExtractInput, FileKind, Locator, RenderRequest, Scope};
use serde_json::{json, Map, Value};

use super::budget::Budget;
use super::view::{self, normalize};
use super::{Finished, FullResult, RenderArgs, ToolError, ToolImage};
use crate::ingestor::Ingestor;

/// The image's byte budget when the call gives none, and its bounds.
pub const DEFAULT_MAX_BYTES: u64 = 1_000_000;
pub const MIN_MAX_BYTES: u64 = 1_000;
pub const MAX_MAX_BYTES: u64 = 8_000_000;
/// The resolution of a PDF page when the call gives none.
pub const DEFAULT_DPI: u32 = 100;
/// The lowest resolution asked for.
const MIN_DPI: u32 = 10;

/// The metadata the worker gives that the answer repeats.
const ANSWERED: &[&str] = &[
    "page",
    "width",
    "height",
    "bytes",
    "dpi",
    "requested_dpi",
    "grey",
    "region",
    "original_width",
    "original_height",
    "scale",
    "note",
];

/// Answer a `render_page` call: its text and its image.
pub(crate) fn render_page(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &RenderArgs,
    budget: Budget,
) -> Result<(Finished, ToolImage), ToolError> {
    let max_bytes = args.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    if !(MIN_MAX_BYTES..=MAX_MAX_BYTES).contains(&max_bytes) {
        return Err(ToolError::Invalid(format!(
            "max_bytes {max_bytes}: from {MIN_MAX_BYTES} to {MAX_MAX_BYTES}"
        )));
    }
    let dpi = args.dpi.unwrap_or(DEFAULT_DPI);
    if !(MIN_DPI..=extractors::MAX_DPI).contains(&dpi) {
        return Err(ToolError::Invalid(format!(
            "dpi {dpi}: from {MIN_DPI} to {}",
            extractors::MAX_DPI
        )));
    }
    let region = match args.region {
        Some(r) => Some(whole_units(r)?),
        None => None,
    };
    let (_, fragment) = extractors::split_fragment(args.locator.trim());
    let fragment_page = if fragment.is_empty() {
        None
    } else {
        fragment
            .parse::<extractors::Fragment>()
            .map_err(|e| ToolError::Invalid(format!("{}: {e}", args.locator.trim())))?
            .page
    };
    let page = args.page.or(fragment_page).unwrap_or(1);
    let file = normalize(&args.locator);
    let doc = view::document(ingestor, scope, &file, args.owner.as_deref())?;
    let index = view::content_index(ingestor, &doc.hash)?;
    let detected = Detected {
        kind: match index.mime_type.as_str() {
            "application/pdf" => FileKind::Document(DocumentKind::Pdf),
            m if m.starts_with("image/") => FileKind::Image,
            m => {
                return Err(ToolError::Invalid(format!(
                    "{file} is {m}: render_page shows PDF pages and pictures; \
                     read_content_objects reads its text"
                )))
            }
        },
        mime: index.mime_type.clone(),
    };
    let pages = index.structure.page_count.unwrap_or(1);
    if detected.kind == FileKind::Image && page != 1 {
        return Err(ToolError::Invalid(format!(
            "{file} is a picture: it has page 1 only"
        )));
    }
    if page == 0 || page > pages {
        return Err(ToolError::Invalid(format!(
            "page {page} of {file}, which has {pages} page(s)"
        )));
    }
    let bytes = super::original::indexed_bytes(ingestor, &doc.owner, &file, &doc.hash)?;
    let options = extractors::ExtractOptions {
        render: Some(RenderRequest {
            page,
            dpi,
            region,
            max_bytes,
        }),
        ..ingestor.extract_options().clone()
    };
    let locator = Locator::root("render");
    let rendered = ingestor.extractor().extract(&ExtractInput {
        bytes: &bytes,
        locator: &locator,
        file_hash: &doc.hash,
        detected: &detected,
        options: &options,
    });
    drop(bytes);
    let object = match rendered {
        Ok(mut e) if e.objects.len() == 1 => e.objects.remove(0),
        Ok(_) => return Err(ToolError::Invalid(format!("{file}: no image came back"))),
        Err(extractors::ExtractError::Malformed { reason, .. }) => {
            return Err(ToolError::Invalid(format!("{file}: {reason}")))
        }
        Err(e) => return Err(ToolError::Invalid(format!("{file}: {e}"))),
    };
    let mut answer = Map::new();
    answer.insert(
        "locator".into(),
        json!(if detected.kind == FileKind::Image {
            file.clone()
        } else {
            format!("{file}#page={page}")
        }),
    );
    doc.note_owner(&mut answer, scope);
    answer.insert("mime_type".into(), json!("image/png"));
    for key in ANSWERED {
        if let Some(v) = object.metadata.get(*key) {
            answer.insert((*key).into(), v.clone());
        }
    }
    if detected.kind == FileKind::Image {
        answer.remove("page");
    }
    let text = budget.finish(&answer)?;
    let full = FullResult::of([answer
        .get("locator")
        .and_then(Value::as_str)
        .unwrap_or_default()]);
    Ok((
        Finished { text, full },
        ToolImage {
            mime_type: "image/png".into(),
            base64: object.data,
        },
    ))
}

/// A region's corners as whole units, rounded outwards, or why it is no region.
fn whole_units(r: [f64; 4]) -> Result<[i64; 4], ToolError> {
    const LIMIT: f64 = 1_000_000.0;
    if r.iter().any(|v| !v.is_finite() || v.abs() > LIMIT) {
        return Err(ToolError::Invalid(format!(
            "region {r:?}: four finite numbers [x0, y0, x1, y1] within ±{LIMIT}"
        )));
    }
    let (x0, x1) = (r[0].min(r[2]), r[0].max(r[2]));
    let (y0, y1) = (r[1].min(r[3]), r[1].max(r[3]));
    Ok([
        x0.floor() as i64,
        y0.floor() as i64,
        x1.ceil() as i64,
        y1.ceil() as i64,
    ])
}
