//! The bytes a file was indexed from, for the tools that need more than its text
//! (`extract_container_item`, `render_page`).
//!
//! A file read from a remote source has no bytes here (they are deleted once indexed): the
//! tools say so. A name is never a path: an uploaded file (its locator is the name it was uploaded under,
//! never absolute) is read only from the copy the upload queue kept of it; a file ingested on
//! this machine (its locator is the canonical absolute path it was found at) is opened there,
//! and only while it is still the regular file that was indexed. An archive member is taken
//! out of its archive again, under the same limits as any ingest. Bytes that are not the
//! indexed content (another hash) are never used.

use std::path::PathBuf;

use extractors::{Locator, Scope};

use super::ToolError;
use crate::index::CatalogEntry;
use crate::ingestor::Ingestor;
use crate::unpack::{Leaf, Unpacker};

/// Where the bytes of `scope`'s own top-level file `entry` are, or why there are none. An
/// entry catalogued with its size and time must still have them.
pub(crate) fn top_level_path(
    ingestor: &Ingestor,
    scope: &Scope,
    entry: &CatalogEntry,
) -> Result<PathBuf, ToolError> {
    let top = entry.locator.as_str();
    if crate::sources::SourceUrl::looks_like_one(top) {
        // A source's file is streamed into a spool, indexed and deleted: nothing keeps it.
        return Err(ToolError::Invalid(format!(
            "{top} was read from a remote source, whose files are not kept once indexed:              its pages cannot be rendered nor its members taken out here (its text stays              searchable and readable; pulling it again indexes it again, it keeps nothing)"
        )));
    }
    if !top.starts_with('/') {
        let kept = crate::uploads::kept_path(&ingestor.kept_root(), scope, top);
        return kept.is_file().then_some(kept).ok_or_else(|| {
            ToolError::Invalid(format!(
                "the bytes of the uploaded file {top} were not kept (an upload is kept while \
                 members were left out by a limit, or when it is a PDF or a picture, within \
                 the service's quota of kept bytes): upload it again"
            ))
        });
    }
    // The path as it is on disk: the locator's first segment, its escapes undone (a name
    // holding `#`, `%` or an invisible character is printed escaped).
    let path = top
        .parse::<Locator>()
        .ok()
        .and_then(|l| l.segments.into_iter().next())
        .map_or_else(|| PathBuf::from(top), PathBuf::from);
    // An archive cut short by a limit is catalogued without size and time (so that it is
    // walked again next run): then only "a regular file, not a link" can be checked.
    let known = entry.size != 0 || entry.mtime_ns != 0;
    let unchanged = std::fs::symlink_metadata(&path).is_ok_and(|m| {
        m.file_type().is_file()
            && (!known || (m.len() == entry.size && crate::unpack::mtime_ns(&m) == entry.mtime_ns))
    });
    if !unchanged {
        return Err(ToolError::Invalid(format!(
            "{top} is not on disk as it was indexed (gone, changed or replaced): ingest it \
             again"
        )));
    }
    Ok(path)
}

/// The bytes of `scope`'s file `locator` (top-level or an archive member) whose content hash
/// is `hash`, at most the largest file extraction reads.
pub(crate) fn indexed_bytes(
    ingestor: &Ingestor,
    scope: &Scope,
    locator: &str,
    hash: &str,
) -> Result<Vec<u8>, ToolError> {
    let limits = ingestor.config().limits.clone();
    let (top, member) = extractors::split_top(locator);
    let top_entry = ingestor
        .catalog()
        .get(scope, top)
        .filter(|e| e.parent.is_none())
        .ok_or_else(|| ToolError::NotFound(locator.to_string()))?;
    let path = top_level_path(ingestor, scope, &top_entry)?;
    let bytes = match member {
        None => {
            let file = std::fs::File::open(&path)
                .map_err(|e| ToolError::Invalid(format!("cannot read {locator}: {e}")))?;
            crate::unpack::read_at_most(file, limits.max_file_bytes.saturating_add(1))
                .map_err(|e| ToolError::Invalid(format!("cannot read {locator}: {e}")))?
        }
        Some(_) => {
            // Walked as when it was indexed: other members pass by (each dropped at once).
            let mut found = None;
            Unpacker::new(&limits).expand_file(&path, &Locator::root(top), &mut |leaf| {
                if let Leaf::File {
                    locator: l, bytes, ..
                } = leaf
                {
                    if found.is_none() && l.to_string() == locator {
                        found = Some(bytes);
                    }
                }
            });
            found.ok_or_else(|| {
                ToolError::Invalid(format!(
                    "{locator} could not be taken out of its archive again (the archive \
                     changed, or a limit stops the walk before it)"
                ))
            })?
        }
    };
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(ToolError::Invalid(format!(
            "{locator} is larger than the largest file read ({} bytes)",
            limits.max_file_bytes
        )));
    }
    if blake3::hash(&bytes).to_hex().as_str() != hash {
        return Err(ToolError::Invalid(format!(
            "{locator} has changed since it was indexed: ingest it again"
        )));
    }
    Ok(bytes)
}
