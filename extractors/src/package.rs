//! OOXML and ODF documents are ZIP packages. Before any parser (docx-rs, calamine, our own XML
//! readers) sees one, [`check_package`] decompresses every part once through a meter and
//! refuses packages that would make a parser allocate or read without bound: too many parts,
//! a part or a total larger than the caps (counted on bytes actually produced, never on
//! declared sizes), a compression ratio no document has, overlapping entries (a non-recursive
//! bomb) and duplicate part names (a parser would see one and skip the other).
//!
//! docx-rs pre-allocates a part's *declared* size and calamine trusts sheet dimensions; both
//! read through zip crates of their own. Checking here first keeps their inputs honest.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use quick_xml::events::Event;

use crate::xmlutil::{attr, local};
use crate::ExtractError;

/// A package opened for reading parts.
pub(crate) type Zip<'a> = zip::ZipArchive<Cursor<&'a [u8]>>;

/// Caps on one package. A real office file is far below every one of them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackageLimits {
    pub max_parts: usize,
    /// Largest single part, decompressed (and declared).
    pub max_part: u64,
    /// All parts together, decompressed.
    pub max_total: u64,
    /// Decompressed bytes per byte of package, beyond `ratio_grace`.
    pub max_ratio: u64,
    pub ratio_grace: u64,
}

pub(crate) const LIMITS: PackageLimits = PackageLimits {
    max_parts: 10_000,
    max_part: 64 * 1024 * 1024,
    max_total: 512 * 1024 * 1024,
    max_ratio: 250,
    ratio_grace: 16 * 1024 * 1024,
};

fn refuse(format: &str, reason: impl ToString) -> ExtractError {
    ExtractError::malformed(format, reason)
}

/// Check the package `bytes` of a `format` document, then open it for reading parts.
pub(crate) fn open_package<'a>(format: &str, bytes: &'a [u8]) -> Result<Zip<'a>, ExtractError> {
    check_package(format, bytes)?;
    zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| refuse(format, e))
}

/// A part's bytes, or `None` when it is missing, unreadable or larger than the part cap.
pub(crate) fn part(zip: &mut Zip<'_>, name: &str) -> Option<Vec<u8>> {
    let file = zip.by_name(name).ok()?;
    let mut out = Vec::new();
    #[allow(clippy::disallowed_methods)] // bounded by `take`
    file.take(LIMITS.max_part + 1).read_to_end(&mut out).ok()?;
    (out.len() as u64 <= LIMITS.max_part).then_some(out)
}

/// The `content.xml` part of a checked ODF package.
pub(crate) fn odf_content(format: &str, bytes: &[u8]) -> Result<Vec<u8>, ExtractError> {
    let mut zip = open_package(format, bytes)?;
    part(&mut zip, "content.xml").ok_or_else(|| refuse(format, "no readable content.xml"))
}

/// `Id → (Target, Type)` of an OOXML `.rels` part.
pub(crate) fn relationships(xml: &[u8]) -> HashMap<String, (String, String)> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut out = HashMap::new();
    while let Ok(event) = reader.read_event_into(&mut buf) {
        match event {
            Event::Start(e) | Event::Empty(e) if local(e.name().as_ref()) == b"Relationship" => {
                if let (Some(id), Some(target)) = (attr(&e, b"Id"), attr(&e, b"Target")) {
                    out.insert(id, (target, attr(&e, b"Type").unwrap_or_default()));
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// Resolve `target` relative to the folder of part `base` (`ppt/slides/slide1.xml` +
/// `../media/x.png` → `ppt/media/x.png`).
pub(crate) fn join(base: &str, target: &str) -> String {
    if let Some(abs) = target.strip_prefix('/') {
        return abs.to_string();
    }
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for seg in target.split('/') {
        match seg {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// Check the package `bytes` of a `format` document against [`LIMITS`].
pub(crate) fn check_package(format: &str, bytes: &[u8]) -> Result<(), ExtractError> {
    check_with(format, bytes, &LIMITS)
}

pub(crate) fn check_with(
    format: &str,
    bytes: &[u8],
    limits: &PackageLimits,
) -> Result<(), ExtractError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| refuse(format, e))?;
    if zip.len() > limits.max_parts {
        return Err(refuse(
            format,
            format!("{} parts (limit {})", zip.len(), limits.max_parts),
        ));
    }
    if zip.has_duplicate_names() {
        return Err(refuse(format, "duplicate part names"));
    }
    if zip.has_overlapping_files().map_err(|e| refuse(format, e))? {
        return Err(refuse(format, "overlapping parts (zip bomb)"));
    }
    let total_cap = (bytes.len() as u64)
        .saturating_mul(limits.max_ratio)
        .max(limits.ratio_grace)
        .min(limits.max_total);
    let mut total = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    for i in 0..zip.len() {
        let mut part = zip.by_index(i).map_err(|e| refuse(format, e))?;
        if part.is_dir() {
            continue;
        }
        let name = String::from_utf8_lossy(part.name_raw()).into_owned();
        if part.size() > limits.max_part {
            return Err(refuse(
                format,
                format!(
                    "part {} declares {} bytes (limit {})",
                    name,
                    part.size(),
                    limits.max_part
                ),
            ));
        }
        let mut produced = 0u64;
        loop {
            let n = match part.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(refuse(format, format!("part {name}: {e}"))),
            };
            produced += n;
            total += n;
            if produced > limits.max_part {
                return Err(refuse(
                    format,
                    format!("part {name} exceeds {} bytes", limits.max_part),
                ));
            }
            if total > total_cap {
                return Err(refuse(
                    format,
                    format!("parts decompress to more than {total_cap} bytes (zip bomb)"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(parts: &[(&str, &[u8])]) -> Vec<u8> {
        crate::testing::zip_parts(parts)
    }

    #[test]
    fn ordinary_packages_pass() {
        let p = package(&[("word/document.xml", b"<w:document/>"), ("a", b"b")]);
        assert!(check_package("docx", &p).is_ok());
    }

    #[test]
    fn a_part_that_inflates_past_the_caps_is_refused() {
        let zeros = vec![0u8; 4 << 20];
        let p = package(&[("word/document.xml", &zeros)]);
        let tight = PackageLimits {
            max_part: 1 << 20,
            ..LIMITS
        };
        let err = check_with("docx", &p, &tight).unwrap_err().to_string();
        assert!(err.contains("word/document.xml"), "{err}");
        let ratio = PackageLimits {
            ratio_grace: 1024,
            max_ratio: 10,
            ..LIMITS
        };
        let err = check_with("docx", &p, &ratio).unwrap_err().to_string();
        assert!(err.contains("zip bomb"), "{err}");
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(check_package("xlsx", b"PK\x03\x04nonsense").is_err());
        assert!(check_package("xlsx", b"").is_err());
    }
}
