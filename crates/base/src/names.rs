//! Names of bytes from elsewhere (an upload, a tool result, an entity): a name is data,
//! never a path. The one rule every face and the pipeline check a name with.

use crate::error::{Error, Result};

/// The longest upload name, in bytes.
pub const MAX_NAME_BYTES: usize = 1024;
/// The most `/`-separated segments an upload name has.
pub const MAX_NAME_SEGMENTS: usize = 32;
/// The longest segment of an upload name, in bytes (what file systems allow).
pub const MAX_SEGMENT_BYTES: usize = 255;

/// The name an upload is stored under: `name` in Unicode NFC, or why it is refused. A name
/// is data, never a path: it must be a plain relative name (`report.pdf`, `team/notes.md`)
/// that reads the same to every caller, so no white space at either end (and none but the
/// plain space inside), no empty, `.` or
/// `..` segment, no `\`, `!/` or `#` (they mean something in a locator), no control or
/// invisible formatting character (bidi overrides, zero-width spaces), at most
/// [`MAX_NAME_BYTES`] bytes in at most [`MAX_NAME_SEGMENTS`] segments of
/// [`MAX_SEGMENT_BYTES`].
pub fn upload_name(name: &str) -> Result<String> {
    use unicode_normalization::UnicodeNormalization;
    let bad = |why: String| Err(Error::Upload(format!("bad upload name {name:?}: {why}")));
    let nfc: String = name.nfc().collect();
    if nfc.is_empty() {
        return bad("empty".into());
    }
    if nfc.len() > MAX_NAME_BYTES {
        return bad(format!("longer than {MAX_NAME_BYTES} bytes"));
    }
    if nfc.trim() != nfc {
        return bad("starts or ends with white space".into());
    }
    if nfc.starts_with('/') {
        return bad(
            "starts with / (a name is relative: it never names a file on the server)".into(),
        );
    }
    if let Some(c) = nfc.chars().find(|&c| {
        c.is_control() || crate::access::is_invisible(c) || (c.is_whitespace() && c != ' ')
    }) {
        return bad(format!("holds {}", crate::access::describe_char(c)));
    }
    if nfc.contains('\\') {
        return bad("holds \\ (use / between folders)".into());
    }
    if nfc.contains(extractors::MEMBER_SEPARATOR) || nfc.contains('#') {
        return bad("holds `!/` or `#`, which locators use for archive members and places".into());
    }
    let segments: Vec<&str> = nfc.split('/').collect();
    if segments.len() > MAX_NAME_SEGMENTS {
        return bad(format!("more than {MAX_NAME_SEGMENTS} folders deep"));
    }
    for s in &segments {
        match *s {
            "" => return bad("has an empty folder name (`//`, or / at the end)".into()),
            "." | ".." => return bad(format!("has a `{s}` segment")),
            s if s.len() > MAX_SEGMENT_BYTES => {
                return bad(format!(
                    "has a segment longer than {MAX_SEGMENT_BYTES} bytes"
                ))
            }
            s if s.trim() != s => {
                return bad("has a folder or file name with white space at an end".into())
            }
            _ => {}
        }
    }
    if extractors::Locator::root(nfc.as_str()).to_string() != nfc {
        return bad("not a plain locator segment".into());
    }
    Ok(nfc)
}
