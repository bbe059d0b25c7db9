//! Page text through PDFium (the PDF engine of Chromium), loaded at run time.
//!
//! The library (`libpdfium.so`, provisioned into the model folder by `scripts/setup-models.py`)
//! is bound once per process with `pdfium-render` and shared; `pdfium-render`'s `thread_safe`
//! feature serialises the calls, so in-process extraction on several threads is safe too.
//! One text page is loaded per PDF page, so an object never mixes pages. Measured on the dev
//! corpus: ~1 ms a page, 4x pdftotext and 10x pdf-extract.
//!
//! PDFium is fuzzed C++ running inside the isolated extraction worker: a crash costs the
//! worker and that one file, as a parser abort would.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use std::collections::HashMap;

use pdfium_render::prelude::{
    PdfDocument, PdfPageObjectCommon, PdfPageObjectType, PdfPageObjectsCommon, Pdfium, PdfiumError,
};

use crate::tidy::tidy;

use crate::positions::{counted, union, Word};

/// One page's text, or why it could not be read.
pub type PageTextResult = (u32, Result<String, String>);

/// Where a page's glyphs and pictures are (PDF points, origin bottom-left), for
/// [`crate::positions`].
#[derive(Debug, Default, Clone)]
pub(crate) struct PageGeometry {
    /// The page's width and height.
    pub size: [f32; 2],
    /// Runs of counted characters, in text order.
    pub words: Vec<Word>,
    /// The boxes of the page's image objects, in content order.
    pub images: Vec<[f32; 4]>,
}

/// The library bound in this process, and the path it came from.
static BOUND: OnceLock<(PathBuf, Pdfium)> = OnceLock::new();
/// Paths that failed to load, and why (not tried again in this process).
static FAILED: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

/// PDFium from `path`, bound on the first successful call; a later call with another path gets
/// an error (one library per process). A failed load is remembered, not retried.
pub(crate) fn library(path: &Path) -> Result<&'static Pdfium, String> {
    let bound = |(bound_path, pdfium): &'static (PathBuf, Pdfium)| {
        if bound_path == path {
            Ok(pdfium)
        } else {
            Err(format!(
                "cannot load PDFium from {}: {} is already loaded in this process",
                path.display(),
                bound_path.display()
            ))
        }
    };
    if let Some(b) = BOUND.get() {
        return bound(b);
    }
    let mut failed = FAILED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(b) = BOUND.get() {
        return bound(b);
    }
    if let Some((_, why)) = failed.iter().find(|(p, _)| p == path) {
        return Err(why.clone());
    }
    match Pdfium::bind_to_library(path) {
        Ok(bindings) => bound(BOUND.get_or_init(|| (path.to_path_buf(), Pdfium::new(bindings)))),
        Err(e) => {
            let why = format!("cannot load PDFium from {}: {e}", path.display());
            failed.push((path.to_path_buf(), why.clone()));
            Err(why)
        }
    }
}

/// An open document.
pub(crate) struct Document<'a> {
    doc: PdfDocument<'a>,
}

/// Open `bytes` (no password, or the empty one).
pub(crate) fn open<'a>(pdfium: &'a Pdfium, bytes: &'a [u8]) -> Result<Document<'a>, String> {
    pdfium
        .load_pdf_from_byte_slice(bytes, None)
        .map(|doc| Document { doc })
        .map_err(|e| describe(&e))
}

fn describe(e: &PdfiumError) -> String {
    format!("PDFium: {e:?}")
}

impl Document<'_> {
    /// Page `page` (1-based).
    pub(crate) fn page(&self, page: u32) -> Result<pdfium_render::prelude::PdfPage<'_>, String> {
        let index = i32::try_from(page.saturating_sub(1)).map_err(|e| e.to_string())?;
        self.doc.pages().get(index).map_err(|e| describe(&e))
    }

    /// How many pages PDFium sees.
    pub(crate) fn page_count(&self) -> u32 {
        u32::try_from(self.doc.pages().len()).unwrap_or(0)
    }

    /// The text of each page in `pages` (1-based), page by page, tidied as pdf-extract's is,
    /// and where each page's words and pictures are; a page PDFium cannot load (or does not
    /// see) is `Err(reason)`.
    pub(crate) fn page_texts(
        &self,
        pages: RangeInclusive<u32>,
    ) -> (Vec<PageTextResult>, HashMap<u32, PageGeometry>) {
        let count = self.page_count();
        let mut geometry = HashMap::new();
        let texts = pages
            .map(|p| {
                if p > count {
                    return (p, Err(format!("PDFium sees {count} pages")));
                }
                let text = self.page_text(p).map(|(text, g)| {
                    geometry.insert(p, g);
                    text
                });
                (p, text)
            })
            .collect();
        (texts, geometry)
    }

    fn page_text(&self, page: u32) -> Result<(String, PageGeometry), String> {
        let index = i32::try_from(page.saturating_sub(1)).map_err(|e| e.to_string())?;
        let page = self.doc.pages().get(index).map_err(|e| describe(&e))?;
        let text = page.text().map_err(|e| describe(&e))?;
        let mut raw = String::with_capacity(usize::try_from(text.len()).unwrap_or(0));
        let mut geometry = PageGeometry {
            size: [page.width().value, page.height().value],
            ..PageGeometry::default()
        };
        // The word being read: its counted characters and box.
        let mut word: Option<Word> = None;
        for c in text.chars().iter() {
            let before = raw.len();
            push_char(&mut raw, c.unicode_value());
            let n = raw
                .get(before..)
                .map_or(0, |s| s.chars().filter(|c| counted(*c)).count());
            if n == 0 {
                geometry.words.extend(word.take());
                continue;
            }
            let bbox = c.loose_bounds().ok().map(|r| {
                [
                    r.left().value,
                    r.bottom().value,
                    r.right().value,
                    r.top().value,
                ]
            });
            let w = word.get_or_insert(Word {
                counted: 0,
                bbox: None,
            });
            w.counted += u32::try_from(n).unwrap_or(0);
            if let Some(b) = bbox.filter(|b| b.iter().all(|v| v.is_finite())) {
                w.bbox = Some(union(w.bbox, b));
            }
        }
        geometry.words.extend(word);
        for object in page.objects().iter() {
            if object.object_type() == PdfPageObjectType::Image {
                if let Ok(q) = object.bounds() {
                    let r = q.to_rect();
                    geometry.images.push([
                        r.left().value,
                        r.bottom().value,
                        r.right().value,
                        r.top().value,
                    ]);
                }
            }
        }
        Ok((tidy(&raw), geometry))
    }

    /// The text inside `bbox` (PDF points, origin bottom-left) of page `page`, as PDFium's
    /// `FPDFText_GetBoundedText` gives it: a check of the boxes [`Document::page_texts`] gives.
    #[cfg(test)]
    pub(crate) fn text_inside(&self, page: u32, bbox: [f32; 4]) -> Result<String, String> {
        use pdfium_render::prelude::{PdfPoints, PdfRect};
        let index = i32::try_from(page.saturating_sub(1)).map_err(|e| e.to_string())?;
        let page = self.doc.pages().get(index).map_err(|e| describe(&e))?;
        let text = page.text().map_err(|e| describe(&e))?;
        Ok(text.inside_rect(PdfRect::new(
            PdfPoints::new(bbox[1]),
            PdfPoints::new(bbox[0]),
            PdfPoints::new(bbox[3]),
            PdfPoints::new(bbox[2]),
        )))
    }
}

/// Append one PDFium character: line breaks as `\n`; PDFium's mark of a word it found
/// hyphenated at a line's end (0x02 from `FPDFText_GetUnicode`, U+FFFE in its text ranges:
/// "expres\u{2}sion") as a soft hyphen and a line break, which `crate::hyphen` joins into
/// the word, as pdftotext does, recording the join; other control codes (glyphs of symbol
/// fonts without a Unicode mapping) as a space.
fn push_char(out: &mut String, code: u32) {
    match char::from_u32(code) {
        Some('\r') => {}
        Some('\n') => out.push('\n'),
        Some('\t') => out.push('\t'),
        Some('\u{2}' | '\u{fffe}') => out.push_str("\u{ad}\n"),
        Some('\u{feff}' | '\0') | None => {}
        Some(c) if c.is_control() => out.push(' '),
        Some(c) => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdfium_characters_become_plain_text() {
        let mut s = String::new();
        for c in "portabil\u{fffe}ity;\r\nexpres\u{2}sion\r\nx\u{12}y\0\tz".chars() {
            push_char(&mut s, c as u32);
        }
        push_char(&mut s, 0xd800);
        assert_eq!(s, "portabil\u{ad}\nity;\nexpres\u{ad}\nsion\nx y\tz");
        let (joined, joins) =
            crate::hyphen::join_hyphens(&s, &crate::hyphen::Vocabulary::default());
        assert_eq!(joined, "portability;\n\nexpression\n\nx y\tz");
        assert_eq!(joins.len(), 2);
    }
}
