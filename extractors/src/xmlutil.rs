//! Small quick-xml helpers shared by the XML-based extractors.

use quick_xml::events::{BytesRef, BytesStart};

use crate::ExtractError;

/// The local part of a qualified name: `w:p` → `p`.
pub(crate) fn local(name: &[u8]) -> &[u8] {
    name.rsplit(|b| *b == b':').next().unwrap_or(name)
}

/// The value of attribute `key` (matched by qualified or local name), unescaped lossily.
pub(crate) fn attr(e: &BytesStart<'_>, key: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == key || local(a.key.as_ref()) == key)
        .map(|a| {
            let raw = String::from_utf8_lossy(&a.value);
            quick_xml::escape::unescape(&raw).map_or_else(|_| raw.to_string(), |s| s.into_owned())
        })
}

/// The most bytes of a picture's description kept in the text ([`picture_text`]).
pub(crate) const MAX_PICTURE_TEXT_BYTES: usize = 200;

/// What a picture shows, as its document says it in words (an HTML `alt`, a slide picture's
/// `descr`): `[picture: …]`, whitespace folded, at most [`MAX_PICTURE_TEXT_BYTES`] of it;
/// `None` when it says nothing (a decorative `alt=""`).
pub(crate) fn picture_text(said: &str) -> Option<String> {
    let folded = said.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.is_empty() {
        return None;
    }
    let mut end = folded.len().min(MAX_PICTURE_TEXT_BYTES);
    while !folded.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!(
        "[picture: {}]",
        folded.get(..end).unwrap_or_default()
    ))
}

/// The text of a character or predefined entity reference (`&#233;`, `&amp;`); other
/// entities resolve to nothing.
pub(crate) fn resolve(r: &BytesRef<'_>) -> String {
    match r.resolve_char_ref() {
        Ok(Some(c)) => c.to_string(),
        _ => r
            .decode()
            .ok()
            .and_then(|n| quick_xml::escape::resolve_predefined_entity(&n).map(String::from))
            .unwrap_or_default(),
    }
}

/// Skip the rest of the element that `start` opened (annotations, tracked deletions, tables
/// nested in cells): its whole subtree is consumed from `reader`.
pub(crate) fn skip_subtree(
    format: &str,
    reader: &mut quick_xml::Reader<&[u8]>,
    start: &BytesStart<'_>,
) -> Result<(), ExtractError> {
    let mut scratch = Vec::new();
    reader
        .read_to_end_into(start.name(), &mut scratch)
        .map(|_| ())
        .map_err(|e| ExtractError::malformed(format, e))
}
